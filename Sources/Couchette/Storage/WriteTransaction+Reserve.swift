import CLMDB

extension WriteTransaction {
    /// Reserves `count` bytes under `key` when the key is not in `table` yet (`MDB_NOOVERWRITE |
    /// MDB_RESERVE`): the caller fills them where LMDB keeps them. Returns nil, changing nothing,
    /// when the key exists: one descent of the tree both looks the key up and inserts it.
    ///
    /// A key after every key of the table is appended (`MDB_APPEND`, see ``put(_:key:value:)``).
    /// The returned bytes are valid until the next write in this transaction. Not for
    /// `MDB_DUPSORT` tables.
    func reserveNew(_ table: Table, key: UnsafeRawBufferPointer, count: Int) throws -> UnsafeMutableRawBufferPointer? {
        var keyValue = MDB_val(pointingAt: key)
        var dataValue = MDB_val(mv_size: count, mv_data: nil)
        var rc = mdb_put(txn, table.handle, &keyValue, &dataValue, UInt32(MDB_APPEND | MDB_RESERVE | MDB_NOOVERWRITE))
        if rc == MDB_KEYEXIST {
            dataValue = MDB_val(mv_size: count, mv_data: nil)
            rc = mdb_put(txn, table.handle, &keyValue, &dataValue, UInt32(MDB_RESERVE | MDB_NOOVERWRITE))
            if rc == MDB_KEYEXIST { return nil }
        }
        try StorageError.check(rc, "writing \(table.name)")
        return UnsafeMutableRawBufferPointer(start: dataValue.mv_data, count: count)
    }
}
