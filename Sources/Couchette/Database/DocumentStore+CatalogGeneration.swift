extension DocumentStore {
    /// The stored catalog generation (``StoreLayout/catalogGenerationKey``): equal generations,
    /// equal catalogs. 0 in a file that has none yet (one being created or upgraded).
    func catalogGeneration(_ txn: ReadTransaction) throws -> UInt64 {
        StoreLayout.decodeUInt64(try txn.get(tables.counters, key: StoreLayout.catalogGenerationKey))
    }

    /// The stored catalog generation as a write transaction sees it, read through the kept cursor
    /// of the counters' table: every commit reads it first, and the collection counters it reads
    /// and rewrites next lie in the same small table, usually on the same page (see
    /// ``WriteContext/flush()``). An overload rather than a cast at run time: the commit knows its
    /// transaction's type.
    func catalogGeneration(_ txn: WriteTransaction) throws -> UInt64 {
        StoreLayout.decodeUInt64(try StoreLayout.catalogGenerationKey.withUnsafeBytes { try txn.getNear(tables.counters, key: $0) })
    }

    /// Records a change to the catalog in `txn`: from its commit on, every copy of the catalog
    /// read under an earlier generation (in this process or another) is known to be stale.
    func advanceCatalogGeneration(_ txn: WriteTransaction) throws {
        let next = try catalogGeneration(txn) + 1
        try txn.put(tables.counters, key: StoreLayout.catalogGenerationKey, value: StoreLayout.encodeUInt64(next))
    }
}
