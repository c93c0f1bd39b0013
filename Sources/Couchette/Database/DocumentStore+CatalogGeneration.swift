extension DocumentStore {
    /// The stored catalog generation (``StoreLayout/catalogGenerationKey``): equal generations,
    /// equal catalogs. 0 in a file that has none yet (one being created or upgraded).
    func catalogGeneration(_ txn: ReadTransaction) throws -> UInt64 {
        StoreLayout.decodeUInt64(try txn.get(tables.counters, key: StoreLayout.catalogGenerationKey))
    }

    /// Records a change to the catalog in `txn`: from its commit on, every copy of the catalog
    /// read under an earlier generation (in this process or another) is known to be stale.
    func advanceCatalogGeneration(_ txn: WriteTransaction) throws {
        let next = try catalogGeneration(txn) + 1
        try txn.put(tables.counters, key: StoreLayout.catalogGenerationKey, value: StoreLayout.encodeUInt64(next))
    }
}
