import CLMDB

#if canImport(Glibc)
import Glibc
#endif

extension ReadTransaction {
    /// Visits the entries whose keys start with the bytes `prefix` points at, in key order,
    /// stopping when `body` returns false.
    ///
    /// ``scan(_:prefix:_:)`` with the prefix borrowed rather than an array, and no upper bound
    /// to make: a prepared lookup builds its key on the stack (``IndexKey/withStringKey(prefix:_:_:)``)
    /// and scans with it at every execution.
    func scan(
        _ table: Table, startingWith prefix: UnsafeRawBufferPointer,
        _ body: (UnsafeRawBufferPointer, UnsafeRawBufferPointer) throws -> Bool
    ) throws {
        try withCursor(table) { cursor in
            var key = MDB_val(mv_size: prefix.count, mv_data: UnsafeMutableRawPointer(mutating: prefix.baseAddress))
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
}
