import CLMDB

/// Operations on `MDB_DUPSORT` tables, where one key holds several values in byte order.
extension ReadTransaction {
    /// Visits the entries whose keys lie in `[lower, upper)` from the last to the first (values of
    /// one key also last to first), stopping when `body` returns false.
    func scanBackward(
        _ table: Table, from lower: [UInt8], to upper: [UInt8]?,
        _ body: (UnsafeRawBufferPointer, UnsafeRawBufferPointer) throws -> Bool
    ) throws {
        try withCursor(table) { cursor in try scanBackward(cursor, table, from: lower, to: upper, body) }
    }

    private func scanBackward(
        _ cursor: OpaquePointer?, _ table: Table, from lower: [UInt8], to upper: [UInt8]?,
        _ body: (UnsafeRawBufferPointer, UnsafeRawBufferPointer) throws -> Bool
    ) throws {
        var key = MDB_val()
        var data = MDB_val()
        var rc: Int32
        if let upper {
            rc = withValue(upper) { start in
                key = start
                return mdb_cursor_get(cursor, &key, &data, MDB_SET_RANGE)
            }
            rc =
                rc == MDB_NOTFOUND
                ? mdb_cursor_get(cursor, &key, &data, MDB_LAST)
                : (rc == MDB_SUCCESS ? mdb_cursor_get(cursor, &key, &data, MDB_PREV) : rc)
        } else {
            rc = mdb_cursor_get(cursor, &key, &data, MDB_LAST)
        }
        while rc == MDB_SUCCESS {
            if Self.compareBytes(key.buffer, lower) < 0 { return }
            if try !body(key.buffer, data.buffer) { return }
            rc = mdb_cursor_get(cursor, &key, &data, MDB_PREV)
        }
        if rc != MDB_NOTFOUND { try StorageError.check(rc, "scanning \(table.name) backward") }
    }
}

extension WriteTransaction {
    /// Removes one value of `key` (the other values of the key stay); false when it was not there.
    @discardableResult
    func delete(_ table: Table, key: [UInt8], value: [UInt8]) throws -> Bool {
        try withValue(key) { keyValue in
            try withValue(value) { dataValue in
                let rc = mdb_del(txn, table.handle, &keyValue, &dataValue)
                if rc == MDB_NOTFOUND { return false }
                try StorageError.check(rc, "deleting from \(table.name)")
                return true
            }
        }
    }
}
