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
    /// The kept cursor on `table`, opened on first use.
    func keptCursor(_ table: Table) throws -> OpaquePointer {
        let index = Int(table.handle)
        if index < keptCursors.count, let cursor = keptCursors[index] { return cursor }
        var cursor: OpaquePointer?
        try StorageError.check(mdb_cursor_open(txn, table.handle, &cursor), "opening a cursor on \(table.name)")
        guard let cursor else { throw StorageError.lmdb(code: EINVAL, operation: "opening a cursor on \(table.name)") }
        if index >= keptCursors.count { keptCursors += repeatElement(nil, count: index + 1 - keptCursors.count) }
        keptCursors[index] = cursor
        return cursor
    }

    /// ``get(_:key:)`` through the kept cursor, which is left on the entry found.
    func getNear(_ table: Table, key: UnsafeRawBufferPointer) throws -> UnsafeRawBufferPointer? {
        let cursor = try keptCursor(table)
        var keyValue = MDB_val(mv_size: key.count, mv_data: UnsafeMutableRawPointer(mutating: key.baseAddress))
        var data = MDB_val()
        let rc = mdb_cursor_get(cursor, &keyValue, &data, MDB_SET)
        if rc == MDB_NOTFOUND { return nil }
        try StorageError.check(rc, "reading \(table.name)")
        return data.buffer
    }

    /// ``put(_:key:count:replacing:writing:)`` of a key already stored (an update), through the
    /// kept cursor: right after ``getNear(_:key:)`` of the same key it writes without a search.
    func replaceNear(
        _ table: Table, key: UnsafeRawBufferPointer, count: Int, writing write: (UnsafeMutableRawBufferPointer) -> Void
    ) throws {
        let cursor = try keptCursor(table)
        var keyValue = MDB_val(mv_size: key.count, mv_data: UnsafeMutableRawPointer(mutating: key.baseAddress))
        var dataValue = MDB_val(mv_size: count, mv_data: nil)
        try StorageError.check(mdb_cursor_put(cursor, &keyValue, &dataValue, UInt32(MDB_RESERVE)), "writing \(table.name)")
        write(UnsafeMutableRawBufferPointer(start: dataValue.mv_data, count: count))
    }

    /// ``put(_:key:value:replacing:)`` through the kept cursor (an ordinary put: no append tried).
    func putNear(_ table: Table, key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer) throws {
        let cursor = try keptCursor(table)
        var keyValue = MDB_val(mv_size: key.count, mv_data: UnsafeMutableRawPointer(mutating: key.baseAddress))
        var dataValue = MDB_val(mv_size: value.count, mv_data: UnsafeMutableRawPointer(mutating: value.baseAddress))
        try StorageError.check(mdb_cursor_put(cursor, &keyValue, &dataValue, 0), "writing \(table.name)")
    }

    /// ``delete(_:key:)`` through the kept cursor; false when the key is not stored.
    @discardableResult
    func deleteNear(_ table: Table, key: UnsafeRawBufferPointer) throws -> Bool {
        let cursor = try keptCursor(table)
        var keyValue = MDB_val(mv_size: key.count, mv_data: UnsafeMutableRawPointer(mutating: key.baseAddress))
        var data = MDB_val()
        let rc = mdb_cursor_get(cursor, &keyValue, &data, MDB_SET)
        if rc == MDB_NOTFOUND { return false }
        try StorageError.check(rc, "finding an entry of \(table.name) to delete")
        try StorageError.check(mdb_cursor_del(cursor, 0), "deleting from \(table.name)")
        return true
    }
}
