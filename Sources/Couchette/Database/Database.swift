import Foundation

/// A Couchette database: a folder `<name>.couchette/` holding one LMDB environment with scopes,
/// collections and their documents.
///
/// The actor owns the single writer. Writes from many tasks are queued and committed together
/// (group commit), so concurrent saves share one disk sync. Reads never wait for the actor: each
/// runs in its own LMDB snapshot on the caller's thread.
///
/// ```swift
/// let db = try Database(name: "app")
/// let tasks = try await db.createCollection(name: "tasks")
/// let doc = MutableDocument(id: "task-1").setString("Buy milk", forKey: "title")
/// try await tasks.save(document: doc)
/// try await db.close()
/// ```
public actor Database {
    nonisolated let core: DatabaseCore
    /// Reads for the layers above Database/: Query, Indexes, Changes, Replication, the Listener.
    nonisolated let reader: StoreReader
    /// Change streams, live queries and the monitor of other processes' commits.
    nonisolated let observation: DatabaseObservation
    /// Purges expired documents in the background.
    nonisolated let sweeper: ExpirationSweeper
    nonisolated let writer: WriterExecutor
    /// Commits made and writes they carried (for the benchmark's writes-per-commit figure).
    nonisolated let statistics = CommitStatistics()

    /// The actor runs on its own writer thread (`WriterExecutor`).
    public nonisolated var unownedExecutor: UnownedSerialExecutor { writer.asUnownedSerialExecutor() }

    /// Opens the database `name` in `config.directory`, creating it if needed.
    ///
    /// - Throws: `.invalidParameter` for an unusable name, `.corruption` for a file this version
    ///   cannot read, `.io` when the folder cannot be created or opened.
    public init(name: String, config: DatabaseConfiguration = DatabaseConfiguration()) throws {
        try self.init(name: name, config: config, clock: SystemClock())
    }

    /// Opens the database with `clock` as the time expiration reads (tests move a clock of their
    /// own instead of sleeping).
    init(name: String, config: DatabaseConfiguration, clock: any WallClock) throws {
        try Database.validate(name: name)
        guard (1...1_000_000).contains(config.maxRevisionHistory) else {
            throw CouchetteError(.invalidParameter, "maxRevisionHistory must be 1 to 1,000,000, got \(config.maxRevisionHistory)")
        }
        try GroupCommitPacing.validate(config.groupCommitWait)
        let path = Database.folder(name: name, directory: config.directory)
        core = try DatabaseCore(name: name, path: path, configuration: config, clock: clock)
        reader = StoreReader(core: core)
        observation = DatabaseObservation(reader: reader, observers: core.observers)
        writer = WriterExecutor(name: name)
        sweeper = ExpirationSweeper(clock: clock)
        // Held weakly: the writer (which the actor holds) must not keep the database alive.
        writer.connect { [weak self] in self?.drainQueuedWrites() ?? false }
        core.writeQueue.connect { [writer] in writer.requestDrain() }
        if core.hadExpirationsAtOpen { sweeper.start(for: self) }
    }

    deinit {
        writer.stop()
        if core.markClosed() {
            sweeper.cancel()
            core.observers.close()
            EnvironmentRegistry.shared.release(core.environment)
        }
    }

    /// The name given at open.
    public nonisolated var name: String { core.name }
    /// The database folder, `"<directory>/<name>.couchette/"`.
    public nonisolated var path: String { core.path + "/" }

    /// Closes the database: later calls on it, its collections and documents throw `.notOpen`,
    /// and every stream it feeds finishes. Closing twice does nothing.
    ///
    /// Queries running on other threads notice the close at their next row and throw
    /// `.notOpen`; closing waits for them only that long (one row's evaluation, in which a
    /// regular expression is cut off after `FunctionLibrary.regexTimeLimit`), never for a whole
    /// long query.
    public func close() throws {
        guard core.markClosed() else { return }
        sweeper.cancel()
        for write in core.writeQueue.takeAll() {
            write.fail(CouchetteError(.notOpen, "database '\(name)' is closed"))
        }
        core.observers.close()
        observation.close()
        EnvironmentRegistry.shared.release(core.environment)
        writer.stop()
    }

    /// Closes the database and deletes its files.
    /// - Throws: `.busy` when another instance in this process still has it open.
    public func delete() throws {
        try close()
        try Database.removeFiles(at: core.path)
    }

    // MARK: - Scopes and collections

    /// The `_default` scope, which always exists.
    public nonisolated func defaultScope() throws -> Scope {
        try core.checkOpen()
        return Scope(name: Catalog.defaultName, database: self)
    }

    /// The `_default._default` collection, which always exists and cannot be deleted.
    public nonisolated func defaultCollection() throws -> Collection {
        guard let collection = try collection(name: Catalog.defaultName, scope: Catalog.defaultName) else {
            throw CouchetteError(.corruption, "database '\(name)' has no default collection")
        }
        return collection
    }

    /// Every scope that holds at least one collection (always including `_default`).
    public nonisolated func scopes() throws -> [Scope] {
        var names = Set(try core.currentCatalog().map(\.scope))
        names.insert(Catalog.defaultName)
        return names.sorted().map { Scope(name: $0, database: self) }
    }

    /// The scope named `name`, or nil when it holds no collection.
    public nonisolated func scope(name: String) throws -> Scope? {
        try core.checkOpen()
        if name == Catalog.defaultName { return Scope(name: name, database: self) }
        return try core.currentCatalog().contains { $0.scope == name } ? Scope(name: name, database: self) : nil
    }

    /// The collection `name` in `scope` (default: `_default`), or nil when it does not exist.
    public nonisolated func collection(name: String, scope: String? = nil) throws -> Collection? {
        let scopeName = scope ?? Catalog.defaultName
        guard let spec = try core.spec(scope: scopeName, name: name) else { return nil }
        return Collection(spec: spec, database: self)
    }

    /// The collections of `scope` (default: `_default`), sorted by name.
    public nonisolated func collections(scope: String? = nil) throws -> [Collection] {
        let scopeName = scope ?? Catalog.defaultName
        return try core.currentCatalog().filter { $0.scope == scopeName }.map { Collection(spec: $0, database: self) }
    }

    /// Creates a collection, or returns the existing one of that name.
    ///
    /// - Throws: `.invalidParameter` when the name or scope breaks the naming rules
    ///   (1–251 characters of `A-Z a-z 0-9 _ - %`, not starting with `_` or `%`).
    public func createCollection(name: String, scope: String? = nil) throws -> Collection {
        try core.checkOpen()
        let scopeName = scope ?? Catalog.defaultName
        try Catalog.validate(scopeName, kind: "scope")
        try Catalog.validate(name, kind: "collection")
        if name == Catalog.defaultName && scopeName != Catalog.defaultName {
            throw CouchetteError(.invalidParameter, "collection name '_default' is reserved for the default scope")
        }
        let spec = try core.environment.write { txn in try core.store.createCollection(txn, scope: scopeName, name: name) }
        try core.reloadCatalog()
        return Collection(spec: spec, database: self)
    }

    /// Deletes a collection and all its documents. Deleting a missing collection does nothing;
    /// existing ``Collection`` objects for it throw `.notOpen` afterwards.
    ///
    /// The same holds for objects of other `Database` instances and processes, even when the
    /// collection is re-created under the same name (the new one is a different collection): every
    /// write checks the catalog stored in its own transaction, so a stale object's save throws
    /// `.notOpen` instead of writing where no one will find it. A stale object's reads never see
    /// the new collection's documents; until its instance notices the deletion (at its next
    /// commit) they find nothing, then they throw `.notOpen`.
    ///
    /// - Throws: `.invalidParameter` for the default collection, which cannot be deleted.
    public func deleteCollection(name: String, scope: String? = nil) throws {
        try core.checkOpen()
        let scopeName = scope ?? Catalog.defaultName
        if name == Catalog.defaultName && scopeName == Catalog.defaultName {
            throw CouchetteError(.invalidParameter, "the default collection cannot be deleted")
        }
        try core.environment.write(usingReserve: true) { txn in try core.store.deleteCollection(txn, scope: scopeName, name: name) }
        try core.reloadCatalog()
    }

    // MARK: - Writes

    /// The write entry for index definitions and builds: they commit in transactions of their
    /// own, outside the group-commit queue, so that other writes commit between the steps of a
    /// long build. With `spec`, the transaction first checks that the collection still exists.
    nonisolated func writeIndexes<R>(
        in spec: CollectionSpec?, usingReserve: Bool = false,
        _ body: (WriteTransaction, IndexRegistry) throws -> R
    ) throws -> R {
        let tables = core.environment.tables
        let indexes = core.indexes
        return try core.environment.write(usingReserve: usingReserve) { txn in
            if let spec { try Catalog.checkCurrent(spec, in: txn, tables: tables) }
            return try body(txn, indexes)
        }
    }

    /// Queues `write` and returns its outcomes once it is committed.
    nonisolated(nonsending) func perform(_ write: PendingWrite) async throws -> [WriteOutcome] {
        try core.checkOpen()
        await submit(CollectionOfOne(write))  // no array for a single write
        return try write.outcomes()
    }

    /// Queues `writes` together and returns once each is committed (or failed): a lone caller
    /// commits them on its own thread, others wait for the committer to resume them (see
    /// ``WriteQueue``).
    ///
    /// Only a caller on no actor (a task on the global pool) may commit on its own thread: an
    /// actor — the main actor above all — stays free to run its other work during the disk sync,
    /// as it always was while its task waited for the writer thread.
    nonisolated(nonsending) func submit(_ writes: some Swift.Collection<PendingWrite>) async {
        let queue = core.writeQueue
        let mayCommitHere = Self.isNoActor(#isolation)
        let admission = queue.append(writes, mayCommitHere: mayCommitHere)
        // The commit takes everything queued, `writes` included (or `close()` failed them). Only
        // while no other transaction holds LMDB's write lock (an index build, another process):
        // waiting for it here would hold this cooperative thread with no way to cancel.
        if admission == .commitHere, let committed = core.environment.ifWriterIsFree({ commitQueuedWrites() }) {
            let yields = queue.handOff()
            for write in committed { write.finish() }
            // A task saving in a loop must not keep its thread from other tasks (other savers
            // among them) for all its saves: it suspends once a turn of own commits has passed
            // (``OwnCommitTurns``), as a save on the writer thread would. Still counted in flight
            // meanwhile, so a saver that runs now queues for the writer thread (group commit)
            // instead of committing alone. Otherwise `handOff()` has ended its flight.
            guard yields else { return }
            await Task.yield()
        } else {
            // Queued; or a lone caller that found the write lock held, whose `writes` (still
            // queued) the writer thread now takes and waits for, off the cooperative pool, where
            // a cancelled task withdraws them. `handOff()` returns false only when `close()`
            // failed them already: then it has ended the caller's flight.
            if admission == .commitHere && !queue.handOff() { return }
            for write in writes { await write.completion() }
        }
        if mayCommitHere { queue.leave() }
    }

    /// Whether `isolation` (a caller's `#isolation`) is no actor. A function of its own: comparing
    /// `#isolation` with nil inside a `nonisolated(nonsending)` function crashes Swift 6.3.1's
    /// code generation ("PHINode should have one entry for each predecessor").
    private static func isNoActor(_ isolation: (any Actor)?) -> Bool { isolation == nil }

    /// The writer thread's part (``WriterExecutor/requestDrain()``): commits one group; returns
    /// whether writes remain queued, for another pass once the actor's jobs queued meanwhile have
    /// run (one group at a time, so that saves arriving without pause cannot hold back
    /// `close()` and the actor's other calls). The group's callers are resumed after the writer
    /// has decided whether to go on, so that a caller's next write finds the queue's committer
    /// already settled: with nothing queued, a lone caller commits its next write itself.
    private nonisolated func drainQueuedWrites() -> Bool {
        let committed = commitQueuedWrites()
        let done = core.writeQueue.writerMayStop()
        for write in committed { write.finish() }
        return !done
    }

    /// Commits every queued write in one transaction (group commit), each in a nested transaction
    /// of its own so that one failing write does not undo the others; returns them, completed, for
    /// their callers to be resumed (``PendingWrite/finish()``). Only the committer named by
    /// ``WriteQueue`` calls it: the writer thread, or a lone caller on its own thread.
    ///
    /// When the last commit showed concurrency, writers expected to join are gathered while the
    /// transaction is open (``StragglerGathering``): the writes taken so far are applied while the
    /// others are still on their way.
    ///
    /// When the group does not fit under ``DatabaseConfiguration/maximumSize``, each write is
    /// committed alone: those that fit are saved, the others get `.full`.
    nonisolated func commitQueuedWrites() -> [PendingWrite] {
        var writes = core.writeQueue.takeAll()
        // Writes their cancelled callers withdrew need no commit (the withdrawal resumed their
        // callers), nor count as writers the next commit should wait for: a group of nothing but
        // those makes no transaction. One withdrawn from here on is skipped where it is claimed.
        writes.removeAll { $0.isWithdrawn }
        guard !writes.isEmpty else { return [] }
        var stragglers = core.writeQueue.stragglers(having: writes.count)
        if writes.allSatisfy({ $0.operations.allSatisfy(\.freesSpace) }) {
            // Gathered first: whether the transaction may use the size reserve depends on them all.
            while let more = stragglers?.next() { writes += more }
            stragglers = nil
        }
        var gathering = GroupGathering(stragglers: stragglers)
        // Recorded before the callers are resumed: their next writes must not count as ones that
        // arrived while this commit ran.
        defer { core.writeQueue.committed(writes.count, startedAt: gathering.completed, endedAt: .now) }
        do {
            try commit(&writes, gathering: &gathering)
        } catch let error as CouchetteError where error.code == .full && writes.count > 1 {
            for write in writes {
                do {
                    var alone = [write]
                    var nothingToGather = GroupGathering(stragglers: nil)
                    try commit(&alone, gathering: &nothingToGather)
                } catch {
                    write.complete(.failure(error))
                }
            }
        } catch {
            for write in writes { write.complete(.failure(error)) }
        }
        return writes
    }

    /// Commits `writes` in one transaction and completes each with its outcome. Throws (completing
    /// none) when the transaction as a whole fails. `gathering`, asked once the writes are
    /// applied, gives writes that joined meanwhile (added to `writes`), until it has no more.
    ///
    /// The writes are applied straight into the transaction first: a nested transaction for each
    /// (so that one failing write does not undo the others) costs LMDB 3 MB of page lists and a
    /// merge, and writes rarely fail. When one does, the transaction is aborted and the group
    /// applied again, each write nested — or, alone, the write fails.
    private nonisolated func commit(_ writes: inout [PendingWrite], gathering: inout GroupGathering) throws {
        do {
            try commit(&writes, isolatingEach: false, gathering: &gathering)
        } catch is GroupNeedsIsolation {
            var nothingToGather = GroupGathering(stragglers: nil)
            try commit(&writes, isolatingEach: true, gathering: &nothingToGather)
        }
    }

    /// Thrown out of a transaction whose writes were not isolated when one of them failed.
    private struct GroupNeedsIsolation: Error {}

    private nonisolated func commit(_ writes: inout [PendingWrite], isolatingEach: Bool, gathering: inout GroupGathering) throws {
        var transactionID: UInt64?
        var storedCatalog: [UInt32: CollectionSpec]?
        do {
            try core.checkOpen()
            let now = core.clock.nowMilliseconds()
            let tables = core.environment.tables
            let store = core.store  // copied once, not for every operation
            var summary = CommitSummary()
            // Registered before these writes were queued, an observer is counted here; with none,
            // the commit collects no ids at all.
            let recordsIDs = core.observers.count > 0
            // Decided by the writes at hand: writes gathered into the open transaction go without
            // the reserve (if the group then does not fit, each is committed alone).
            let freesSpace = writes.allSatisfy { $0.operations.allSatisfy(\.freesSpace) }
            let results = try core.environment.write(usingReserve: freesSpace) { txn -> [Result<[WriteOutcome], any Error>] in
                summary = CommitSummary()
                var commitStart: [UInt32: UInt64] = [:]
                // The catalog as this transaction sees it: another instance or process may have
                // deleted (and re-created) a collection meanwhile. The cached copy when the stored
                // catalog generation shows it current; a stale copy is replaced, so objects of
                // collections deleted elsewhere then fail their reads too.
                let collections = try core.catalog.current(in: txn, store: store)
                storedCatalog = collections
                // The outcomes of one pending write's operations, applied in `context`.
                func apply(_ write: PendingWrite, in context: WriteContext) throws -> [WriteOutcome] {
                    try write.operations.indices.map { index in
                        let operation = write.operations[index]
                        let outcome = try store.apply(operation, in: context) { write.precomputedRevision(at: index, replacing: $0) }
                        if write.isAtomic && outcome == .conflict {
                            throw CouchetteError(.conflict, "batch refused: \(operation.documentDescription) changed since it was read")
                        }
                        return outcome
                    }
                }
                // Not isolated, the writes share one context, as the operations of one batch do: the
                // collection counters are read and written once per commit, not once per write
                // (four lookups in the main database each, for a group of single saves).
                let shared =
                    isolatingEach
                    ? nil
                    : WriteContext(txn: txn, tables: tables, now: now, collections: collections, recordsIDs: recordsIDs)
                var results: [Result<[WriteOutcome], any Error>] = []
                results.reserveCapacity(writes.count)
                var next = 0
                while true {
                    while next < writes.count {
                        let write = writes[next]
                        next += 1
                        // Withdrawn by its cancelled caller, it is not applied; claimed here, it can
                        // no longer be withdrawn (see ``PendingWrite``).
                        guard write.claim() else {
                            results.append(.failure(CancellationError()))
                            continue
                        }
                        do {
                            if let shared {
                                results.append(.success(try apply(write, in: shared)))
                                continue
                            }
                            let (outcomes, changes, start) = try txn.nested { child in
                                let context = WriteContext(
                                    txn: child, tables: tables, now: now, collections: collections, recordsIDs: recordsIDs,
                                    commitStart: commitStart)
                                let outcomes = try apply(write, in: context)
                                try context.flush()
                                return (outcomes, context.summary, context.commitStart)
                            }
                            summary.merge(changes)
                            commitStart = start
                            results.append(.success(outcomes))
                        } catch let error as StorageError {
                            throw error  // map full or resized: abort the whole group, grow, retry
                        } catch {
                            // Not isolated, the write may have changed something before it failed:
                            // abort. Alone, its error then fails it (see commitQueuedWrites); in a
                            // group, the group is applied again with each write isolated.
                            guard isolatingEach else { throw writes.count == 1 ? error : GroupNeedsIsolation() }
                            results.append(.failure(error))
                        }
                    }
                    guard let more = gathering.more(), !more.isEmpty else { break }
                    writes += more
                }
                if let shared {
                    try shared.flush()
                    summary = shared.summary
                }
                // Told before the commit, so the cross-process monitor never sees it unrecorded.
                transactionID = txn.id
                let ownWrites = summary.ownWrites
                core.observers.forEachTransactionObserver { $0.willCommit(transactionID: txn.id, ownWrites) }
                return results
            }
            transactionID = nil  // committed: the record stays for the monitor
            if core.configuration.fullSync && !core.environment.syncsMetaPage { try core.environment.syncToDisk() }
            statistics.recordCommit(carrying: writes.count)
            for (write, result) in zip(writes, results) { write.complete(result) }
            if recordsIDs {
                summary.deduplicate()
                core.observers.publish(summary)
            } else if core.observers.count > 0, let storedCatalog {
                // Observers registered while this commit ran: it collected no ids for them.
                core.observers.publish((try? summaryForLateObservers(summary.ownWrites, catalog: storedCatalog)) ?? CommitSummary())
            }
        } catch {
            if let transactionID {  // the commit failed: LMDB reuses its id
                core.observers.forEachTransactionObserver { $0.commitFailed(transactionID: transactionID) }
            }
            throw CouchetteError.wrapping(error)
        }
    }

    /// Collects writes made in `body` and commits them in one transaction: all or none.
    ///
    /// Documents are encoded on the caller's side while `body` runs; nothing is written until it
    /// returns. If `body` throws, nothing is written and the error is rethrown. A
    /// `.failOnConflict` write whose document changed since it was read fails the whole batch
    /// with `.conflict`. If the task is cancelled while the batch waits for the writer, nothing
    /// is written and `CancellationError` is thrown (see <doc:TheWritePath>).
    ///
    /// ```swift
    /// try await db.inBatch { batch in
    ///     for i in 0..<10 {
    ///         try batch.save(document: MutableDocument(id: "doc-\(i)").setInt(i, forKey: "n"), in: tasks)
    ///     }
    /// }
    /// ```
    public nonisolated(nonsending) func inBatch<R>(_ body: (Batch) throws -> R) async throws -> R {
        try core.checkOpen()
        let batch = Batch(database: self)
        defer { core.blobs.release(batch.heldBlobs) }
        let result = try body(batch)
        batch.close()
        guard !batch.operations.isEmpty else { return result }
        let outcomes = try await perform(PendingWrite(batch.operations, isAtomic: true, updateRevisions: batch.updateRevisions))
        batch.apply(outcomes)
        return result
    }

    // MARK: - Maintenance

    /// Runs housekeeping on the database.
    ///
    /// - `.compact` rewrites the file without free pages and deletes blob contents no revision
    ///   references. Throws `.busy` when another `Database` instance (in this or another process)
    ///   has the database open.
    /// - `.reindex` clears and rebuilds every index of every collection.
    /// - `.integrityCheck` reads everything and throws `.corruption` on the first inconsistency,
    ///   including a referenced blob whose content is missing, of the wrong length or digest.
    public func performMaintenance(type: MaintenanceType) async throws {
        try core.checkOpen()
        switch type {
        case .compact:
            guard EnvironmentRegistry.shared.openers(path: core.path) == 1 else {
                throw CouchetteError(.busy, "cannot compact '\(name)': another Database instance in this process has it open")
            }
            core.observers.forEachTransactionObserver { $0.willCompact() }
            defer { core.observers.forEachTransactionObserver { $0.didCompact() } }
            defer { core.indexes.forgetSnapshots() }
            try removeUnreferencedBlobs { removal in try core.environment.compact(whileExclusive: removal) }
        case .reindex:
            try await rebuildIndexes()
        case .integrityCheck:
            try core.read { txn in try IntegrityCheck(store: core.store, catalog: core.catalog.all).run(txn) }
            try checkBlobs()
        }
    }

    // MARK: - Expiration

    /// Purges every document whose expiration has passed; returns the next expiration, if any.
    nonisolated(nonsending) func purgeExpiredDocuments() async throws -> UInt64? {
        let now = core.clock.nowMilliseconds()
        let next = try core.read { try core.store.nextExpiration($0) }
        if let next, next <= now {
            _ = try await perform(PendingWrite([.purgeExpired(now: now)]))
            return try core.read { try core.store.nextExpiration($0) }
        }
        return next
    }
}

extension WriteOperation {
    var documentDescription: String {
        switch self {
        case .save(let collection, let id, _, _, _), .delete(let collection, let id, _, _),
            .purge(let collection, let id), .setExpiration(let collection, let id, _),
            .putLocal(let collection, let id, _, _):
            "document '\(id)' in \(collection.fullName)"
        case .graft(let collection, let revision):
            "revision \(revision.revisionID) of document '\(revision.id)' in \(collection.fullName)"
        case .resolveConflict(let collection, let resolution):
            "conflict of document '\(resolution.id)' in \(collection.fullName)"
        case .saveJSON(let documents): "\(documents.count) documents saved as JSON in \(documents.collection.fullName)"
        case .purgeExpired: "expired documents"
        }
    }
}
