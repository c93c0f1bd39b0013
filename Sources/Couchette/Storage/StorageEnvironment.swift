import CLMDB
import Dispatch
import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// One LMDB environment: the folder `<name>.couchette/` with `data.mdb` and `lock.mdb`.
///
/// It owns the map-growth gate (see ``ResizeGate``) and hides `MDB_MAP_FULL` and `MDB_MAP_RESIZED`
/// from everything above it: ``write(usingReserve:_:)`` grows the map and re-runs its body, so bodies
/// must derive everything from the transaction they are given. Read transactions use `MDB_NOTLS`,
/// so any thread may read while another writes.
///
/// Growth stops at ``sizeLimit``: a write that needs more throws `.full`. The last part of the
/// limit (``SizeLimit/reserve``) is kept for writes that free space (deletions, purges), since in
/// LMDB even a deletion must write new copies of the pages it changes: a database that filled up
/// can always be emptied again.
///
/// LMDB forbids opening one environment twice in a process, so instances come from
/// ``EnvironmentRegistry``, which shares one per path.
final class StorageEnvironment: @unchecked Sendable {
    // @unchecked: `env`, `isClosed`, `isWritable` and `isLockReleased` change only while `gate` is held exclusively
    // (compaction, close, the first write) and are read only while it is held shared; `tables` and `path` are
    // immutable; LMDB's environment handle itself is thread-safe for the calls made here.
    let path: String
    let tables: Tables
    private var env: OpaquePointer
    private var isClosed = false
    /// Whether `env` was opened for writing. An existing database is opened read-only
    /// (`MDB_RDONLY`) and reopened for writing by its first write: a writable environment costs
    /// LMDB 3 MB of write buffers at open, 2 MB of them zeroed, which made opening a large
    /// database and reading one document take about twice as long (see ``reopenForWriting()``).
    private var isWritable: Bool
    /// Whether ``close()`` closed `lockFile` (also changed only under `gate`).
    private var isLockReleased = false
    private let gate = ResizeGate()
    /// How far the map may grow (fixed at creation).
    let sizeLimit: SizeLimit
    /// Whether each commit syncs LMDB's meta page too (opened without `MDB_NOMETASYNC`): then a
    /// commit that returns has survived power loss. Fixed by the first opener in the process.
    let syncsMetaPage: Bool
    private let lockFile: Int32
    /// Taken around every write transaction, before LMDB's write lock (see ``WriterLock``).
    private let writerLock: WriterLock
    /// Reset read transactions kept for reuse (`mdb_txn_renew` is much cheaper than a new
    /// transaction). They hold no snapshot; all are aborted before the map or file changes.
    private let idleReaders = Locked<[ReaderHandle]>([])
    private static let maximumIdleReaders = 16
    /// The last read's transaction, left active with its snapshot: the next read takes it (one
    /// atomic exchange, no lock) and, when no transaction has committed since — in any process,
    /// by the file's meta page — reads in it as it is, without `mdb_txn_reset` and
    /// `mdb_txn_renew`; else it renews it first. So a run of reads (a document read per id, say)
    /// between commits costs one snapshot, and a read never sees less than what had committed
    /// when it began, exactly as with a fresh transaction.
    ///
    /// A kept snapshot that falls behind would hold pages LMDB could otherwise reuse, so it is
    /// retired (reset, to ``idleReaders``) by this process's next commit (``retireWarmReader()``)
    /// and, whatever happens, ``warmReaderLifetime`` after it was kept (another process's commits
    /// are not seen here). Like every idle reader, it is aborted before the map or file changes.
    private let warmReader = Atomic<OpaquePointer?>(nil)
    /// Whether a retirement of ``warmReader`` is scheduled (at most one is).
    private let warmRetirementScheduled = Atomic<Bool>(false)
    /// How long, in milliseconds, a kept snapshot may wait for the next read: reads in a loop
    /// come microseconds apart, and a retirement per period costs a dispatch. (Tests lengthen it
    /// to see a kept snapshot outlast another process's commit.)
    let warmReaderLifetime = Atomic<Int>(5)
    /// Zeros written ahead of the used pages so that small commits do not grow the file (see
    /// ``FileHeadroom``); changed only inside write transactions.
    private let headroom = Locked(FileHeadroom())
    private let pageSize: Int

    /// An `MDB_txn*` of a reset read transaction, handed between threads (MDB_NOTLS allows it).
    private struct ReaderHandle: @unchecked Sendable {
        // @unchecked: a reset LMDB read transaction is owned by exactly one holder at a time —
        // the idle list or the thread that took it out of the list.
        let txn: OpaquePointer
    }

    /// The sub-databases every Couchette environment has. Key layouts are described where used.
    struct Tables: Sendable, Equatable {
        let meta: Table
        let documents: Table
        let sequences: Table
        let revisions: Table
        let expirations: Table
        let indexes: Table
        /// Sorted duplicates (`MDB_DUPSORT`): one key can hold many values, kept in byte order.
        let indexEntries: Table
        /// Full-text indexes: statistics and posting blocks (see ``FullTextStore``).
        let fullText: Table
        /// LMDB's main database, where the other tables are recorded. Every commit rewrites its
        /// root page (the changed tables' roots are recorded there), so small values written by
        /// most commits — the per-collection counters — cost no page of their own here.
        let counters: Table

        /// Every named table, in the order it is opened, and whether it is opened with
        /// `MDB_DUPSORT` (sorted duplicates).
        static let names: [(name: StaticString, duplicateSorted: Bool)] = [
            ("meta", false), ("documents", false), ("sequences", false), ("revisions", false), ("expirations", false),
            ("indexes", false), ("index-entries", true), ("full-text", false),
        ]
    }

    static let initialMapSize = 64 << 20

    init(path: String, sizeLimit: SizeLimit = SizeLimit(maximum: nil), syncsMetaPage: Bool = false) throws {
        self.path = path
        self.sizeLimit = sizeLimit
        self.syncsMetaPage = syncsMetaPage
        // Plain system calls first: opening an existing database is the common case, and
        // Foundation's versions cost tens of microseconds (a failed removal builds an NSError).
        if mkdir(path, 0o755) != 0 && errno != EEXIST {
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        }
        unlink(path + "/compact.tmp")  // left by a crash mid-compaction
        lockFile = open(path + "/couchette.lock", O_CREAT | O_RDWR | O_CLOEXEC, 0o644)
        guard lockFile >= 0 else {
            throw CouchetteError(.io, "cannot open lock file in \(path): \(String(cString: strerror(errno)))")
        }
        flock(lockFile, LOCK_SH)
        writerLock = WriterLock(folder: path)
        do {
            let hasData = try DataFileCheck.verify(folder: path)  // before LMDB maps a file that could crash it
            let mapSize = min(Self.initialMapSize, sizeLimit.forWrites)
            if hasData, let (readOnly, tables) = Self.openReadOnly(at: path, mapSize: mapSize, syncsMetaPage: syncsMetaPage) {
                env = readOnly
                self.tables = tables
                isWritable = false
            } else {
                // A new database, or one whose tables are not all there yet: they are created now.
                // Closed here if its tables cannot be opened: the init has not set every stored
                // property yet, so no `deinit` would close it (and LMDB forbids opening the same
                // file twice in one process, which a retry would then do).
                let opened = try Self.openEnvironment(at: path, mapSize: mapSize, syncsMetaPage: syncsMetaPage)
                do {
                    tables = try Self.openTables(opened)
                } catch {
                    mdb_env_close(opened)
                    throw error
                }
                env = opened
                isWritable = true
            }
            var status = MDB_stat()
            mdb_env_stat(env, &status)
            pageSize = Int(status.ms_psize)
        } catch {
            Glibc.close(lockFile)
            throw CouchetteError.wrapping(error)
        }
    }

    /// The environment opened read-only with its tables, or nil when that is not possible (a table
    /// is missing, the file cannot be opened so): the caller then opens it for writing, which
    /// creates what is missing or reports the error.
    private static func openReadOnly(at path: String, mapSize: Int, syncsMetaPage: Bool) -> (OpaquePointer, Tables)? {
        guard let readOnly = try? openEnvironment(at: path, mapSize: mapSize, syncsMetaPage: syncsMetaPage, readOnly: true) else {
            return nil
        }
        guard let tables = try? openTables(readOnly, creating: false) else {
            mdb_env_close(readOnly)
            return nil
        }
        return (readOnly, tables)
    }

    deinit {
        if !isClosed {
            dropIdleReaders()
            mdb_env_close(env)
        }
        if !isLockReleased { Glibc.close(lockFile) }
    }

    /// Opens the environment with a map of `mapSize` bytes (LMDB raises it to what the file uses);
    /// `readOnly` for reads only (`MDB_RDONLY`: no write buffers, no writable descriptors).
    private static func openEnvironment(
        at path: String, mapSize: Int, syncsMetaPage: Bool, readOnly: Bool = false
    ) throws -> OpaquePointer {
        var handle: OpaquePointer?
        try StorageError.check(mdb_env_create(&handle), "creating environment")
        guard let handle else { throw StorageError.lmdb(code: ENOMEM, operation: "creating environment") }
        do {
            try StorageError.check(mdb_env_set_maxdbs(handle, MDB_dbi(Tables.names.count + 2)), "setting maxdbs")
            try StorageError.check(mdb_env_set_maxreaders(handle, 512), "setting maxreaders")
            try StorageError.check(mdb_env_set_mapsize(handle, mapSize), "setting map size")
            // Durability: data pages are synced at each commit (one fdatasync); the meta page that
            // makes them the current state is written after that sync, and synced as well (LMDB
            // writes it through a second descriptor opened with O_DSYNC) only for full sync (see
            // DatabaseConfiguration.fullSync) — otherwise the next commit's sync carries it.
            let flags =
                UInt32(MDB_NOTLS | MDB_NORDAHEAD) | (syncsMetaPage ? 0 : UInt32(MDB_NOMETASYNC)) | (readOnly ? UInt32(MDB_RDONLY) : 0)
            try StorageError.check(mdb_env_open(handle, path, flags, 0o644), "opening \(path)")
            var dead: Int32 = 0
            mdb_reader_check(handle, &dead)  // clear slots of crashed processes
            return handle
        } catch {
            mdb_env_close(handle)
            throw error
        }
    }

    /// Opens the tables in a read-only transaction when they all exist (every open but the first:
    /// no writer lock taken), else creates the missing ones in a write transaction.
    private static func openTables(_ env: OpaquePointer) throws -> Tables {
        let tables = try openTables(env, creating: false) ?? openTables(env, creating: true)
        guard let tables else { throw StorageError.lmdb(code: MDB_NOTFOUND, operation: "opening tables") }
        return tables
    }

    /// Every table's handle (the main database's last); nil when `creating` is false and a table
    /// does not exist yet.
    private static func openTables(_ env: OpaquePointer, creating: Bool) throws -> Tables? {
        var txn: OpaquePointer?
        try StorageError.check(mdb_txn_begin(env, nil, creating ? 0 : UInt32(MDB_RDONLY), &txn), "opening tables")
        var handles: [Table] = []
        for (name, duplicateSorted) in Tables.names {
            var dbi: MDB_dbi = 0
            let flags = (creating ? UInt32(MDB_CREATE) : 0) | (duplicateSorted ? UInt32(MDB_DUPSORT) : 0)
            // A string literal's bytes end with a NUL, as LMDB needs.
            let rc = mdb_dbi_open(txn, UnsafeRawPointer(name.utf8Start).assumingMemoryBound(to: CChar.self), flags, &dbi)
            if rc == MDB_NOTFOUND && !creating {
                mdb_txn_abort(txn)
                return nil
            }
            if rc != MDB_SUCCESS {
                mdb_txn_abort(txn)
                try StorageError.check(rc, "opening table \(name)")
            }
            handles.append(Table(handle: dbi, name: name))
        }
        var main: MDB_dbi = 0
        let rc = mdb_dbi_open(txn, nil, 0, &main)
        if rc != MDB_SUCCESS {
            mdb_txn_abort(txn)
            try StorageError.check(rc, "opening the main table")
        }
        handles.append(Table(handle: main, name: "main"))
        try StorageError.check(mdb_txn_commit(txn), "opening tables")
        return Tables(
            meta: handles[0], documents: handles[1], sequences: handles[2],
            revisions: handles[3], expirations: handles[4], indexes: handles[5],
            indexEntries: handles[6], fullText: handles[7], counters: handles[8])
    }

    // MARK: - Transactions

    /// Runs `body` in a read-only snapshot that holds every transaction committed before the
    /// call (see ``warmReader``). Never call it from inside another transaction.
    func read<R>(_ body: (ReadTransaction) throws -> R) throws -> R {
        while true {
            do {
                return try gate.withShared {
                    try checkOpen()
                    let txn = try currentReader()
                    defer { keepWarm(txn) }
                    return try body(ReadTransaction(txn: txn))
                }
            } catch StorageError.mapResized {
                try adoptNewMapSize()
            } catch let error as StorageError {
                throw error.couchetteError
            }
        }
    }

    /// A read transaction at the last committed transaction: the kept one (``warmReader``) as it
    /// is when nothing committed since it began, else renewed; without one, ``beginRead()``.
    /// Called with the gate held shared.
    private func currentReader() throws -> OpaquePointer {
        guard let warm = warmReader.exchange(nil, ordering: .acquiring) else { return try beginRead() }
        var info = MDB_envinfo()
        mdb_env_info(env, &info)  // the newer meta page's id, read through the map: no lock
        if mdb_txn_id(warm) == info.me_last_txnid { return warm }
        mdb_txn_reset(warm)
        let rc = mdb_txn_renew(warm)
        if rc == MDB_SUCCESS { return warm }
        mdb_txn_abort(warm)
        try StorageError.check(rc, "renewing a read")
        return try beginRead()
    }

    /// Keeps `txn`, a read just finished, active as ``warmReader`` (or, when another read's is
    /// kept already, resets it to the idle list), and makes sure a retirement is scheduled.
    /// Called with the gate held shared.
    private func keepWarm(_ txn: OpaquePointer) {
        guard warmReader.compareExchange(expected: nil, desired: txn, ordering: .acquiringAndReleasing).exchanged else {
            return endRead(txn)
        }
        // Sequentially consistent with the retirement's two steps in the other order (clear the
        // flag, then take the reader): either it finds this reader, or this read sees the flag
        // cleared and schedules the next retirement.
        guard !warmRetirementScheduled.load(ordering: .sequentiallyConsistent),
            !warmRetirementScheduled.exchange(true, ordering: .sequentiallyConsistent)
        else { return }
        let lifetime = DispatchTimeInterval.milliseconds(warmReaderLifetime.load(ordering: .relaxed))
        DispatchQueue.global().asyncAfter(deadline: .now() + lifetime) { [weak self] in
            self?.retireWarmReaderOnSchedule()
        }
    }

    /// The scheduled retirement of ``warmReader`` (see ``keepWarm(_:)``).
    private func retireWarmReaderOnSchedule() {
        gate.withShared {
            warmRetirementScheduled.store(false, ordering: .sequentiallyConsistent)
            guard !isClosed else { return }
            retireWarmReader()
        }
    }

    /// Resets the kept read transaction, if any, to the idle list: its snapshot may be behind now.
    /// Called with the gate held shared (by a read's thread, a commit's, or the retirement's).
    private func retireWarmReader() {
        if let warm = warmReader.exchange(nil, ordering: .sequentiallyConsistent) { endRead(warm) }
    }

    /// Whether a retirement of the kept snapshot is scheduled: for tests, which wait out one
    /// scheduled with the default lifetime before they lengthen ``warmReaderLifetime``.
    var warmRetirementIsScheduled: Bool { warmRetirementScheduled.load(ordering: .sequentiallyConsistent) }

    /// The snapshot (transaction id) the kept read transaction (``warmReader``) reads, nil when
    /// none is kept: for tests, which check that a kept snapshot never outlives a commit or
    /// ``warmReaderLifetime``.
    var keptSnapshotID: UInt64? {
        gate.withShared {
            guard let warm = warmReader.exchange(nil, ordering: .acquiring) else { return nil }
            defer {
                if !warmReader.compareExchange(expected: nil, desired: warm, ordering: .releasing).exchanged { endRead(warm) }
            }
            return UInt64(mdb_txn_id(warm))
        }
    }

    /// A read transaction: a renewed idle one when there is one, else a new one.
    private func beginRead() throws -> OpaquePointer {
        if let idle = idleReaders.withLock({ $0.popLast() }) {
            let rc = mdb_txn_renew(idle.txn)
            if rc == MDB_SUCCESS { return idle.txn }
            mdb_txn_abort(idle.txn)
            try StorageError.check(rc, "renewing a read")
        }
        var txn: OpaquePointer?
        try StorageError.check(mdb_txn_begin(env, nil, UInt32(MDB_RDONLY), &txn), "beginning a read")
        return txn!
    }

    private func endRead(_ txn: OpaquePointer) {
        mdb_txn_reset(txn)
        let kept = idleReaders.withLock { idle in
            guard idle.count < Self.maximumIdleReaders else { return false }
            idle.append(ReaderHandle(txn: txn))
            return true
        }
        if !kept { mdb_txn_abort(txn) }
    }

    /// Aborts every idle read transaction, the kept one too; called with the gate held
    /// exclusively (no read is running).
    private func dropIdleReaders() {
        if let warm = warmReader.exchange(nil, ordering: .acquiring) { mdb_txn_abort(warm) }
        let idle = idleReaders.withLock { idle in
            defer { idle.removeAll() }
            return idle
        }
        for reader in idle { mdb_txn_abort(reader.txn) }
    }

    /// Runs `body` in a write transaction and commits it. If the map fills up, the transaction is
    /// aborted, the map grown and `body` run again from the start; once the map has reached
    /// ``sizeLimit`` it throws `.full` instead.
    ///
    /// `usingReserve` lets the map grow into ``SizeLimit/reserve``: only for writes that free
    /// space (deleting, purging), so that a full database can still be emptied. The map shrinks
    /// back afterwards, so other writes never use the reserve.
    ///
    /// The transaction begins and commits on the calling thread within this call, as LMDB requires.
    /// It first takes the writer lock (``WriterLock``), waiting as long as another transaction of
    /// this process or another one holds it; ``ifWriterIsFree(_:)`` is the way not to wait.
    func write<R>(usingReserve: Bool = false, _ body: (WriteTransaction) throws -> R) throws -> R {
        writerLock.lock()
        defer { writerLock.unlock() }
        defer { if usingReserve { shrinkMapToWriteLimit() } }
        while true {
            do {
                return try gate.withShared {
                    try checkOpen()
                    guard isWritable else { throw StorageError.readOnly }
                    var txn: OpaquePointer?
                    try StorageError.check(mdb_txn_begin(env, nil, 0, &txn), "beginning a write")
                    if !usingReserve { makeHeadroom() }
                    let result: R
                    do {
                        result = try body(WriteTransaction(txn: txn!))
                    } catch {
                        mdb_txn_abort(txn)
                        throw error
                    }
                    try StorageError.check(mdb_txn_commit(txn), "committing")
                    // A snapshot kept from before this commit would now hold the pages it freed.
                    retireWarmReader()
                    return result
                }
            } catch StorageError.mapFull {
                try growMap(usingReserve: usingReserve)
            } catch StorageError.mapResized {
                try adoptNewMapSize()
            } catch StorageError.readOnly {
                try reopenForWriting()
            } catch let error as StorageError {
                throw error.couchetteError
            }
        }
    }

    /// Runs `body` holding the writer lock if no other write transaction holds it (in this process
    /// or another one that takes it, see ``WriterLock``), so that the ``write(usingReserve:_:)``
    /// calls it makes do not wait for LMDB's write lock; nil, without running `body`, when one
    /// does. For a caller that must not block its thread waiting for another transaction.
    func ifWriterIsFree<R>(_ body: () throws -> R) rethrows -> R? {
        guard writerLock.tryLock() else { return nil }
        defer { writerLock.unlock() }
        return try body()
    }

    /// Writes zeros ahead of the used pages when a small commit would otherwise grow the file.
    /// Called right after a write transaction began, before it wrote anything: LMDB's writer
    /// lock makes every page past the last committed one unused (see ``FileHeadroom``).
    private func makeHeadroom() {
        var info = MDB_envinfo()
        mdb_env_info(env, &info)
        var descriptor: Int32 = -1
        guard mdb_env_get_fd(env, &descriptor) == MDB_SUCCESS, descriptor >= 0 else { return }
        let usedEnd = (Int(info.me_last_pgno) + 1) * pageSize
        headroom.withLock { headroom in
            let range = headroom.extensionNeeded(usedEnd: usedEnd, mapSize: info.me_mapsize) {
                var status = stat()
                return fstat(descriptor, &status) == 0 ? Int(status.st_size) : nil
            }
            if let range { headroom.extended(to: FileHeadroom.fillWithZeros(range, descriptor: descriptor)) }
        }
    }

    /// Replaces the read-only environment an existing database was opened with by a writable one,
    /// at its first write. No transaction of this process is active meanwhile (the gate is held
    /// exclusively), and the tables keep their handles: they are opened in the same order.
    ///
    /// If the file cannot be opened for writing (its permissions, a read-only file system), the
    /// read-only environment is opened again, so reads go on, and the write fails with the error.
    private func reopenForWriting() throws {
        try gate.withExclusive {
            try checkOpen()
            guard !isWritable else { return }
            dropIdleReaders()
            var info = MDB_envinfo()
            mdb_env_info(env, &info)
            let mapSize = max(info.me_mapsize, min(Self.initialMapSize, sizeLimit.forWrites))
            mdb_env_close(env)
            do {
                env = try Self.openEnvironment(at: path, mapSize: mapSize, syncsMetaPage: syncsMetaPage)
                isWritable = true
                guard try Self.openTables(env, creating: false) == tables else {
                    throw CouchetteError(.corruption, "table handles changed while reopening \(path) for writing")
                }
            } catch {
                let failure = CouchetteError.wrapping(error)
                if isWritable { mdb_env_close(env) }
                isWritable = false
                guard let (readOnly, _) = Self.openReadOnly(at: path, mapSize: mapSize, syncsMetaPage: syncsMetaPage) else {
                    // Neither way opens any more: the database behaves as closed.
                    isClosed = true
                    throw failure
                }
                env = readOnly
                throw failure
            }
        }
    }

    /// Flushes data and meta pages to disk: after a commit when full sync is on but the
    /// environment does not sync its meta page (another opener in this process opened it first).
    func syncToDisk() throws {
        try gate.withShared {
            try checkOpen()
            try StorageError.check(mdb_env_sync(env, 1), "syncing \(path)")
        }
    }

    /// The flags LMDB opened the environment with (`mdb_env_get_flags`); 0 when closed.
    var lmdbFlags: UInt32 {
        gate.withShared {
            guard !isClosed else { return 0 }
            var flags: UInt32 = 0
            mdb_env_get_flags(env, &flags)
            return flags
        }
    }

    private func checkOpen() throws {
        if isClosed { throw CouchetteError(.notOpen, "database at \(path) is closed") }
    }

    /// The id of the last transaction committed to the file by any process (`me_last_txnid`).
    ///
    /// Cheap (it reads the meta pages through the memory map, no transaction), so it can be polled
    /// to notice commits made by other processes; 0 when the environment is closed.
    var lastTransactionID: UInt64 {
        gate.withShared {
            guard !isClosed else { return 0 }
            var info = MDB_envinfo()
            mdb_env_info(env, &info)
            return UInt64(info.me_last_txnid)
        }
    }

    // MARK: - Map size

    private func growMap(usingReserve: Bool) throws {
        try gate.withExclusive {
            try checkOpen()
            dropIdleReaders()
            var info = MDB_envinfo()
            mdb_env_info(env, &info)
            let limit = usingReserve ? sizeLimit.maximum : sizeLimit.forWrites
            guard info.me_mapsize < limit else { throw sizeLimit.fullError(path) }
            let step = min(info.me_mapsize, 1 << 30)  // double small maps, then grow by 1 GiB
            try StorageError.check(mdb_env_set_mapsize(env, min(info.me_mapsize + step, limit)), "growing the map")
        }
    }

    /// Takes the map back below the reserve after a write that was allowed into it (LMDB keeps
    /// it at least as large as the file's used pages).
    private func shrinkMapToWriteLimit() {
        let grown = gate.withShared { () -> Bool in
            guard !isClosed else { return false }
            var info = MDB_envinfo()
            mdb_env_info(env, &info)
            return info.me_mapsize > sizeLimit.forWrites
        }
        guard grown else { return }
        gate.withExclusive {
            guard !isClosed else { return }
            var info = MDB_envinfo()
            mdb_env_info(env, &info)
            guard info.me_mapsize > sizeLimit.forWrites else { return }
            dropIdleReaders()
            mdb_env_set_mapsize(env, sizeLimit.forWrites)  // best effort: a failure leaves it larger
        }
    }

    private func adoptNewMapSize() throws {
        try gate.withExclusive {
            // A close may have come between the failed read or write and this gate.
            try checkOpen()
            dropIdleReaders()
            try StorageError.check(mdb_env_set_mapsize(env, 0), "adopting the map size")
        }
    }

    // MARK: - Maintenance

    /// Where the last committed transaction's pages end in `data.mdb`: the file may be longer
    /// (zeros ahead of them, see ``FileHeadroom``), never shorter unless its tail pages are free.
    var usedBytes: Int {
        gate.withShared {
            guard !isClosed else { return 0 }
            var info = MDB_envinfo()
            mdb_env_info(env, &info)
            return (Int(info.me_last_pgno) + 1) * pageSize
        }
    }

    /// Size of `data.mdb` in bytes.
    var fileSize: UInt64 {
        let attributes = try? FileManager.default.attributesOfItem(atPath: path + "/data.mdb")
        return (attributes?[.size] as? NSNumber)?.uint64Value ?? 0
    }

    /// Rewrites the file without free pages and swaps it in.
    ///
    /// Throws `.busy` when another process has the environment open: its memory map would keep
    /// pointing at the old file. The caller guarantees no other opener in this process.
    /// `exclusive` runs first, while no other process can have the environment open (and no
    /// transaction of this one is active: it must not read through the environment).
    func compact(whileExclusive exclusive: () throws -> Void = {}) throws {
        try gate.withExclusive {
            try checkOpen()
            guard flock(lockFile, LOCK_EX | LOCK_NB) == 0 else {
                flock(lockFile, LOCK_SH)
                throw CouchetteError(.busy, "cannot compact \(path): another process has it open")
            }
            defer { flock(lockFile, LOCK_SH) }
            try exclusive()
            dropIdleReaders()
            let temporary = path + "/compact.tmp"
            try? FileManager.default.removeItem(atPath: temporary)
            try FileManager.default.createDirectory(atPath: temporary, withIntermediateDirectories: false)
            do {
                try StorageError.check(mdb_env_copy2(env, temporary, UInt32(MDB_CP_COMPACT)), "compacting \(path)")
                try Self.fsyncFile(temporary + "/data.mdb")
            } catch {
                try? FileManager.default.removeItem(atPath: temporary)
                throw CouchetteError.wrapping(error)
            }
            mdb_env_close(env)
            isClosed = true
            headroom.withLock { $0.reset() }
            // rename(2) is atomic: after a crash either the old or the compacted file is in place.
            let renamed = rename(temporary + "/data.mdb", path + "/data.mdb")
            try? FileManager.default.removeItem(atPath: temporary)
            env = try Self.openEnvironment(at: path, mapSize: min(Self.initialMapSize, sizeLimit.forWrites), syncsMetaPage: syncsMetaPage)
            isClosed = false
            isWritable = true
            guard try Self.openTables(env) == tables else {
                throw CouchetteError(.corruption, "table handles changed while compacting \(path)")
            }
            if renamed != 0 {
                throw CouchetteError(.io, "cannot replace \(path)/data.mdb: \(String(cString: strerror(errno)))")
            }
        }
    }

    private static func fsyncFile(_ path: String) throws {
        let descriptor = open(path, O_RDONLY)
        guard descriptor >= 0 else { throw CouchetteError(.io, "cannot open \(path) to sync it") }
        defer { Glibc.close(descriptor) }
        guard fsync(descriptor) == 0 else { throw CouchetteError(.io, "cannot sync \(path)") }
    }

    /// Closes the LMDB environment; waits for transactions in flight to finish first.
    func close() {
        gate.withExclusive {
            guard !isClosed else { return }
            dropIdleReaders()
            mdb_env_close(env)
            // Released with the environment, not when the object goes: a closed database must
            // not keep its descriptor and shared lock while something still references it.
            Glibc.close(lockFile)
            isLockReleased = true
            isClosed = true
        }
        // After the gate: a write holds the writer lock while it waits for the gate, which would
        // never come while this held the gate and waited for the writer lock.
        writerLock.close()
    }
}
