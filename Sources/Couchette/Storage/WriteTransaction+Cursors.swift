import CLMDB

#if canImport(Glibc)
import Glibc
#endif

/// Reads and writes through one cursor per table, kept for the rest of the transaction.
///
/// `mdb_get`, `mdb_put` and `mdb_del` each open a cursor and descend from the root, looking every
/// page up in the transaction's dirty list on the way (a binary search over thousands of pages in a
/// large batch). A kept cursor stays where its last operation left it, and LMDB checks the page
/// under it before descending: writing the record just read, or the next key of a batch in key
/// order, needs no descent at all. LMDB frees a write transaction's cursors when it commits or
/// aborts, so they are never closed here; a nested transaction has its own `WriteTransaction`.
extension WriteTransaction {
    /// Slots the list of kept cursors gets at once: two for each table handle (the main database
    /// is 1, a store's named tables follow it), with room to spare.
    private static let keptCursorRoom = 32

    /// The kept cursor on `table`, opened on first use. `appending`: a second one that only
    /// appends (``appendNear(_:key:count:writing:)``), so it stays on the table's last page while
    /// the first one moves around it.
    func keptCursor(_ table: Table, appending: Bool = false) throws -> OpaquePointer {
        let index = Int(table.handle) * 2 + (appending ? 1 : 0)
        if index < keptCursors.count, let cursor = keptCursors[index] { return cursor }
        var cursor: OpaquePointer?
        try StorageError.check(mdb_cursor_open(txn, table.handle, &cursor), "opening a cursor on \(table.name)")
        guard let cursor else { throw StorageError.lmdb(code: EINVAL, operation: "opening a cursor on \(table.name)") }
        // Room for every table's pair at the first growth: a commit opens cursors on several
        // tables, in no particular order of their handles, and each growth would reallocate.
        if index >= keptCursors.count { keptCursors += repeatElement(nil, count: max(index + 1, Self.keptCursorRoom) - keptCursors.count) }
        keptCursors[index] = cursor
        return cursor
    }

    /// ``get(_:key:)`` through the kept cursor, which is left on the entry found.
    func getNear(_ table: Table, key: UnsafeRawBufferPointer) throws -> UnsafeRawBufferPointer? {
        try seek(try keptCursor(table), table, key)
    }

    /// Moves `cursor` to `key`: the value stored there, or nil when the key is not stored.
    private func seek(_ cursor: OpaquePointer, _ table: Table, _ key: UnsafeRawBufferPointer) throws -> UnsafeRawBufferPointer? {
        var keyValue = MDB_val(pointingAt: key)
        var data = MDB_val()
        let rc = mdb_cursor_get(cursor, &keyValue, &data, MDB_SET)
        if rc == MDB_NOTFOUND { return nil }
        try StorageError.check(rc, "reading \(table.name)")
        return data.buffer
    }

    /// ``put(_:key:count:replacing:writing:)`` of a key already stored (an update), through the
    /// kept cursor: right after ``getNear(_:key:)`` of the same key it writes without a search.
    ///
    /// When the cursor still stands on `key` (checked: its key is compared first), the value is
    /// replaced where it is (`MDB_CURRENT`: in place when the size is unchanged, as an edit that
    /// keeps every value's size leaves a record), without even the search of the cursor's page.
    func replaceNear(
        _ table: Table, key: UnsafeRawBufferPointer, count: Int, writing write: (UnsafeMutableRawBufferPointer) -> Void
    ) throws {
        let cursor = try keptCursor(table)
        var keyValue = MDB_val(pointingAt: key)
        var dataValue = MDB_val(mv_size: count, mv_data: nil)
        let flags = isOn(cursor, key) ? MDB_CURRENT | MDB_RESERVE : MDB_RESERVE
        try StorageError.check(mdb_cursor_put(cursor, &keyValue, &dataValue, UInt32(flags)), "writing \(table.name)")
        write(UnsafeMutableRawBufferPointer(start: dataValue.mv_data, count: count))
    }

    /// Whether `cursor` stands on an entry whose key is `key`.
    private func isOn(_ cursor: OpaquePointer, _ key: UnsafeRawBufferPointer) -> Bool {
        var current = MDB_val()
        var data = MDB_val()
        guard mdb_cursor_get(cursor, &current, &data, MDB_GET_CURRENT) == MDB_SUCCESS, current.mv_size == key.count else { return false }
        guard let stored = current.mv_data, let wanted = key.baseAddress else { return key.isEmpty }
        return memcmp(stored, wanted, key.count) == 0
    }

    /// ``put(_:key:count:replacing:writing:)`` of a key expected after every key of `table` (the
    /// next sequence), through the kept appending cursor: LMDB appends at the cursor's last page
    /// without descending from the root, where a put through a fresh cursor descends twice (to
    /// check the append, then to insert). A key that is not the last gets an ordinary put.
    func appendNear(
        _ table: Table, key: UnsafeRawBufferPointer, count: Int, writing write: (UnsafeMutableRawBufferPointer) -> Void
    ) throws {
        let cursor = try keptCursor(table, appending: true)
        var keyValue = MDB_val(pointingAt: key)
        var dataValue = MDB_val(mv_size: count, mv_data: nil)
        var rc = mdb_cursor_put(cursor, &keyValue, &dataValue, UInt32(MDB_APPEND | MDB_RESERVE))
        if rc == MDB_KEYEXIST {
            dataValue = MDB_val(mv_size: count, mv_data: nil)
            rc = mdb_cursor_put(cursor, &keyValue, &dataValue, UInt32(MDB_RESERVE))
        }
        try StorageError.check(rc, "writing \(table.name)")
        write(UnsafeMutableRawBufferPointer(start: dataValue.mv_data, count: count))
    }

    /// ``put(_:key:value:replacing:)`` through the kept cursor (an ordinary put: no append tried).
    func putNear(_ table: Table, key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer) throws {
        let cursor = try keptCursor(table)
        var keyValue = MDB_val(pointingAt: key)
        var dataValue = MDB_val(pointingAt: value)
        try StorageError.check(mdb_cursor_put(cursor, &keyValue, &dataValue, 0), "writing \(table.name)")
    }

    /// ``delete(_:key:)`` through the kept cursor; false when the key is not stored.
    @discardableResult
    func deleteNear(_ table: Table, key: UnsafeRawBufferPointer) throws -> Bool {
        let cursor = try keptCursor(table)
        guard try seek(cursor, table, key) != nil else { return false }
        try StorageError.check(mdb_cursor_del(cursor, 0), "deleting from \(table.name)")
        return true
    }
}
