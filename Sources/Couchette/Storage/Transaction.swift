import CLMDB

#if canImport(Glibc)
import Glibc
#endif

/// A named LMDB sub-database of a ``StorageEnvironment``.
///
/// Its name is a `StaticString`, so a table (and the ``StorageEnvironment/Tables`` every store
/// keeps) is plain data: copying one retains nothing, which point reads do several times each.
struct Table: Sendable, Hashable {
    let handle: MDB_dbi
    /// For messages: the handle says which table it is.
    let name: StaticString

    static func == (lhs: Table, rhs: Table) -> Bool { lhs.handle == rhs.handle }

    func hash(into hasher: inout Hasher) { hasher.combine(handle) }
}

/// Calls `body` with an `MDB_val` that points at `bytes` (LMDB never writes through key pointers).
@inline(__always)
func withValue<R>(_ bytes: [UInt8], _ body: (inout MDB_val) throws -> R) rethrows -> R {
    try bytes.withUnsafeBytes { raw in
        var value = MDB_val(pointingAt: raw)
        return try body(&value)
    }
}

extension MDB_val {
    /// A value that points at `bytes`, for a key or value handed to LMDB (which never writes
    /// through those pointers).
    @inline(__always)
    init(pointingAt bytes: UnsafeRawBufferPointer) {
        self.init(mv_size: bytes.count, mv_data: UnsafeMutableRawPointer(mutating: bytes.baseAddress))
    }

    /// The bytes this value points at; valid only while its transaction is alive and unmodified.
    var buffer: UnsafeRawBufferPointer { UnsafeRawBufferPointer(start: mv_data, count: mv_size) }
}

/// A read-only view of the store at one moment (an LMDB snapshot).
///
/// Buffers returned by ``get(_:key:)`` point into the memory map and are valid only until the
/// transaction ends; copy what must outlive it.
class ReadTransaction {
    let txn: OpaquePointer

    init(txn: OpaquePointer) { self.txn = txn }

    /// The transaction's id: the snapshot's last committed transaction for a read, the id this
    /// transaction will commit under for a write.
    var id: UInt64 { UInt64(mdb_txn_id(txn)) }

    /// The value stored under `key`, or nil.
    func get(_ table: Table, key: [UInt8]) throws -> UnsafeRawBufferPointer? {
        try key.withUnsafeBytes { try get(table, key: $0) }
    }

    /// The value stored under the key `key` points at, or nil.
    func get(_ table: Table, key: UnsafeRawBufferPointer) throws -> UnsafeRawBufferPointer? {
        var keyValue = MDB_val(pointingAt: key)
        var data = MDB_val()
        let rc = mdb_get(txn, table.handle, &keyValue, &data)
        if rc == MDB_NOTFOUND { return nil }
        try StorageError.check(rc, "reading \(table.name)")
        return data.buffer
    }

    /// Whether `table` holds no entry in this transaction's view: one look at the table's record,
    /// no cursor and no search.
    func isEmpty(_ table: Table) throws -> Bool {
        var stat = MDB_stat()
        try StorageError.check(mdb_stat(txn, table.handle, &stat), "reading the size of \(table.name)")
        return stat.ms_entries == 0
    }

    /// The value stored under `key`, copied out of the map.
    func getBytes(_ table: Table, key: [UInt8]) throws -> [UInt8]? {
        try get(table, key: key).map { Array($0) }
    }

    /// Visits the entries whose keys lie in `[lower, upper)` in key order, stopping when `body`
    /// returns false. A nil `upper` runs to the end of the table.
    func scan(
        _ table: Table, from lower: [UInt8], to upper: [UInt8]?,
        _ body: (UnsafeRawBufferPointer, UnsafeRawBufferPointer) throws -> Bool
    ) throws {
        try withCursor(table) { cursor in
            try scan(cursor, table, from: lower, to: upper, body)
        }
    }

    /// Opens a cursor on `table` for `body` and closes it when `body` returns.
    func withCursor<R>(_ table: Table, _ body: (OpaquePointer?) throws -> R) throws -> R {
        var cursor: OpaquePointer?
        try StorageError.check(mdb_cursor_open(txn, table.handle, &cursor), "opening a cursor on \(table.name)")
        defer { mdb_cursor_close(cursor) }
        return try body(cursor)
    }

    private func scan(
        _ cursor: OpaquePointer?, _ table: Table, from lower: [UInt8], to upper: [UInt8]?,
        _ body: (UnsafeRawBufferPointer, UnsafeRawBufferPointer) throws -> Bool
    ) throws {
        var key = MDB_val()
        var data = MDB_val()
        // LMDB rejects empty keys, so an empty lower bound means "from the first entry".
        var rc: Int32 =
            lower.isEmpty
            ? mdb_cursor_get(cursor, &key, &data, MDB_FIRST)
            : withValue(lower) { start in
                key = start
                return mdb_cursor_get(cursor, &key, &data, MDB_SET_RANGE)
            }
        while rc == MDB_SUCCESS {
            if let upper, Self.compareBytes(key.buffer, upper) >= 0 { return }
            if try !body(key.buffer, data.buffer) { return }
            rc = mdb_cursor_get(cursor, &key, &data, MDB_NEXT)
        }
        if rc != MDB_NOTFOUND { try StorageError.check(rc, "scanning \(table.name)") }
    }

    /// Visits every entry whose key starts with `prefix`, in key order, stopping when `body`
    /// returns false.
    ///
    /// Callers slice keys past the prefix: the walk ends at the first key without it, so no
    /// such key is ever handed on.
    func scan(
        _ table: Table, prefix: [UInt8],
        _ body: (UnsafeRawBufferPointer, UnsafeRawBufferPointer) throws -> Bool
    ) throws {
        try prefix.withUnsafeBytes { try scan(table, startingWith: $0, body) }
    }

    /// ``scan(_:prefix:_:)`` with the prefix borrowed: a prepared lookup builds its key on the
    /// stack (``IndexKey/withStringKey(prefix:_:_:)``) and scans with it at every execution.
    func scan(
        _ table: Table, startingWith prefix: UnsafeRawBufferPointer,
        _ body: (UnsafeRawBufferPointer, UnsafeRawBufferPointer) throws -> Bool
    ) throws {
        try withCursor(table) { cursor in
            var key = MDB_val(pointingAt: prefix)
            var data = MDB_val()
            // LMDB rejects empty keys: an empty prefix (every key starts with it) starts at the first.
            var rc = mdb_cursor_get(cursor, &key, &data, prefix.isEmpty ? MDB_FIRST : MDB_SET_RANGE)
            while rc == MDB_SUCCESS {
                if let start = prefix.baseAddress, key.mv_size < prefix.count || memcmp(key.mv_data, start, prefix.count) != 0 {
                    return
                }
                if try !body(key.buffer, data.buffer) { return }
                rc = mdb_cursor_get(cursor, &key, &data, MDB_NEXT)
            }
            if rc != MDB_NOTFOUND { try StorageError.check(rc, "scanning \(table.name)") }
        }
    }

    /// The first entry at or after `key`, if any.
    func first(_ table: Table, atOrAfter key: [UInt8]) throws -> (key: [UInt8], value: [UInt8])? {
        var found: (key: [UInt8], value: [UInt8])?
        try scan(table, from: key, to: nil) { foundKey, value in
            found = (Array(foundKey), Array(value))
            return false
        }
        return found
    }

    /// Byte-wise order of a stored key and a bound, LMDB's default key order.
    static func compareBytes(_ lhs: UnsafeRawBufferPointer, _ rhs: [UInt8]) -> Int {
        let common = min(lhs.count, rhs.count)
        for index in 0..<common where lhs[index] != rhs[index] {
            return lhs[index] < rhs[index] ? -1 : 1
        }
        return lhs.count - rhs.count
    }
}

/// A read-write transaction. It must begin and end on one thread, inside one synchronous call.
final class WriteTransaction: ReadTransaction {
    /// Cursors kept open until the transaction ends, by table handle (see ``keptCursor(_:)``).
    ///
    /// Unchecked exclusivity: a write transaction is used by the one thread that began it, inside
    /// one synchronous call (LMDB requires it), and no access to the list overlaps another (each
    /// lookup or insertion is done before the cursor it yields is used). The runtime checks cost
    /// more than the lookups: several per write of a batch.
    @exclusivity(unchecked) var keptCursors: [OpaquePointer?] = []

    /// Stores `value` under `key`, replacing any previous value.
    ///
    /// A key after every key of the table is appended (`MDB_APPEND`): LMDB then fills pages
    /// completely instead of splitting them in half, which keeps tables written in key order —
    /// sequences, generated ids — about half the size. Any other key gets an ordinary put (LMDB
    /// refuses the append with `MDB_KEYEXIST` without changing anything). `replacing`: the caller
    /// knows the key is stored already (an update), so the append, which would walk to the
    /// table's last page only to be refused, is not tried.
    func put(_ table: Table, key: [UInt8], value: [UInt8], replacing: Bool = false) throws {
        try key.withUnsafeBytes { key in try value.withUnsafeBytes { try put(table, key: key, value: $0, replacing: replacing) } }
    }

    /// ``put(_:key:value:replacing:)`` of bytes where they lie: a key built on the stack
    /// (``StoreLayout/withDocumentKey(_:_:_:)``) is not copied into an array first.
    func put(_ table: Table, key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer, replacing: Bool = false) throws {
        var keyValue = MDB_val(pointingAt: key)
        var dataValue = MDB_val(pointingAt: value)
        var rc = replacing ? MDB_KEYEXIST : mdb_put(txn, table.handle, &keyValue, &dataValue, UInt32(MDB_APPEND))
        if rc == MDB_KEYEXIST { rc = mdb_put(txn, table.handle, &keyValue, &dataValue, 0) }
        try StorageError.check(rc, "writing \(table.name)")
    }

    /// Puts `key` with a value of `count` bytes that `write` fills where LMDB will keep them
    /// (`MDB_RESERVE`): the value is never built and copied first. Not for `MDB_DUPSORT` tables.
    /// `write` must fill every byte and must not touch the transaction. `replacing` as for
    /// ``put(_:key:value:replacing:)``.
    func put(
        _ table: Table, key: [UInt8], count: Int, replacing: Bool = false, writing write: (UnsafeMutableRawBufferPointer) -> Void
    ) throws {
        try key.withUnsafeBytes { try put(table, key: $0, count: count, replacing: replacing, writing: write) }
    }

    /// ``put(_:key:count:replacing:writing:)`` with the key where it lies (not copied into an array).
    func put(
        _ table: Table, key: UnsafeRawBufferPointer, count: Int, replacing: Bool = false,
        writing write: (UnsafeMutableRawBufferPointer) -> Void
    ) throws {
        var keyValue = MDB_val(pointingAt: key)
        var dataValue = MDB_val(mv_size: count, mv_data: nil)
        var rc = replacing ? MDB_KEYEXIST : mdb_put(txn, table.handle, &keyValue, &dataValue, UInt32(MDB_APPEND | MDB_RESERVE))
        if rc == MDB_KEYEXIST {
            dataValue = MDB_val(mv_size: count, mv_data: nil)
            rc = mdb_put(txn, table.handle, &keyValue, &dataValue, UInt32(MDB_RESERVE))
        }
        try StorageError.check(rc, "writing \(table.name)")
        write(UnsafeMutableRawBufferPointer(start: dataValue.mv_data, count: count))
    }

    /// Removes `key`; returns false when it was not there.
    @discardableResult
    func delete(_ table: Table, key: [UInt8]) throws -> Bool {
        try key.withUnsafeBytes { try delete(table, key: $0) }
    }

    /// ``delete(_:key:)`` with the key where it lies (not copied into an array).
    @discardableResult
    func delete(_ table: Table, key: UnsafeRawBufferPointer) throws -> Bool {
        var keyValue = MDB_val(pointingAt: key)
        let rc = mdb_del(txn, table.handle, &keyValue, nil)
        if rc == MDB_NOTFOUND { return false }
        try StorageError.check(rc, "deleting from \(table.name)")
        return true
    }

    /// Removes every entry whose key starts with `prefix`.
    func deleteAll(_ table: Table, prefix: [UInt8]) throws {
        var keys: [[UInt8]] = []
        try scan(table, prefix: prefix) { key, _ in
            keys.append(Array(key))
            return true
        }
        for key in keys { try delete(table, key: key) }
    }

    /// Runs `body` in a nested transaction: its writes are kept only if it returns normally.
    func nested<R>(_ body: (WriteTransaction) throws -> R) throws -> R {
        var child: OpaquePointer?
        try StorageError.check(mdb_txn_begin(mdb_txn_env(txn), txn, 0, &child), "beginning a nested transaction")
        guard let child else { throw StorageError.lmdb(code: EINVAL, operation: "beginning a nested transaction") }
        let result: R
        do {
            result = try body(WriteTransaction(txn: child))
        } catch {
            mdb_txn_abort(child)
            throw error
        }
        // mdb_txn_commit frees the child whether or not it succeeds: never abort it afterwards.
        try StorageError.check(mdb_txn_commit(child), "committing a nested transaction")
        return result
    }
}
