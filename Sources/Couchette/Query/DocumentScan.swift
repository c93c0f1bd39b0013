/// Where a query's documents come from.
///
/// Today every source is a ``CollectionScan`` (a full scan of one collection's documents in id
/// order). The index planner will add scans that walk a range of an index and look the documents
/// up; the executor only needs this protocol, so it does not change.
protocol DocumentScan: Sendable, CustomStringConvertible {
    /// Calls `body` for every visible document inside `txn`, until it returns false.
    func forEach(_ txn: ReadTransaction, store: DocumentStore, now: UInt64,
                 _ body: (SourceBinding) throws -> Bool) throws
}

/// Every document of one collection, read from the `documents` table in key (document id) order.
/// Expired documents are absent; deleted ones (tombstones) only when `includeDeleted`.
struct CollectionScan: DocumentScan {
    let collection: CollectionSpec
    let includeDeleted: Bool

    var description: String {
        "SCAN \(collection.fullName)\(includeDeleted ? " (including deleted)" : "")"
    }

    func forEach(_ txn: ReadTransaction, store: DocumentStore, now: UInt64,
                 _ body: (SourceBinding) throws -> Bool) throws {
        let prefix = StoreLayout.collectionPrefix(collection.number)
        try txn.scan(store.tables.documents, prefix: prefix) { key, value in
            let record = try DocumentRecord(decoding: value)
            if record.isExpired(now: now) || (record.isDeleted && !includeDeleted) { return true }
            let id = String(decoding: key[prefix.count...], as: UTF8.self)
            let root = EncodedValue(bytes: record.body.isEmpty ? Document.emptyBody : record.body)
            return try body(SourceBinding(id: id, sequence: record.sequence, revisionID: record.revisionID,
                                          isDeleted: record.isDeleted, expiration: record.expiration, body: Datum(root)))
        }
    }
}
