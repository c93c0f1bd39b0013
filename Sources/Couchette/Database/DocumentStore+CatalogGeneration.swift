extension DocumentStore {
    /// The stored catalog generation (``StoreLayout/catalogGenerationKey``): equal generations,
    /// equal catalogs. 0 in a file that has none yet (one being created or upgraded).
    ///
    /// In a write transaction it is read through the kept cursor of the counters' table: every
    /// commit reads it first, and the collection counters it reads and rewrites next lie in the
    /// same small table, usually on the same page (see ``WriteContext/flush()``).
    func catalogGeneration(_ txn: ReadTransaction) throws -> UInt64 {
        let key = StoreLayout.catalogGenerationKey
        if let txn = txn as? WriteTransaction {
            return StoreLayout.decodeUInt64(try key.withUnsafeBytes { try txn.getNear(tables.counters, key: $0) })
        }
        return StoreLayout.decodeUInt64(try txn.get(tables.counters, key: key))
    }

    /// Records a change to the catalog in `txn`: from its commit on, every copy of the catalog
    /// read under an earlier generation (in this process or another) is known to be stale.
    func advanceCatalogGeneration(_ txn: WriteTransaction) throws {
        let next = try catalogGeneration(txn) + 1
        try txn.put(tables.counters, key: StoreLayout.catalogGenerationKey, value: StoreLayout.encodeUInt64(next))
    }
}
