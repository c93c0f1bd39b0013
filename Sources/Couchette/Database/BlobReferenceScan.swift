/// Reads which blob digests the stored revisions reference: every current body and every body
/// kept for a conflicting leaf, in every collection. Compaction keeps these contents; the
/// integrity check verifies them.
struct BlobReferenceScan {
    let store: DocumentStore
    let catalog: [CollectionSpec]

    /// Each referenced digest with the first place that references it (for messages).
    func run(_ txn: ReadTransaction) throws -> [String: (reference: BlobSearch.Reference, document: String)] {
        var found: [String: (reference: BlobSearch.Reference, document: String)] = [:]
        func note(_ body: [UInt8], _ document: String) {
            for reference in BlobSearch.references(in: EncodedValue(bytes: body)) where found[reference.digest] == nil {
                found[reference.digest] = (reference, document)
            }
        }
        for collection in catalog {
            try txn.scan(store.tables.documents, prefix: StoreLayout.collectionPrefix(collection.number)) { key, value in
                let id = String(decoding: key[4...], as: UTF8.self)
                let record = try DocumentRecord(decoding: value)
                let document = "document '\(id)' in \(collection.fullName)"
                if !record.isDeleted { note(record.body, document) }
                for leaf in try store.revisionTree(txn, collection, id, current: record).liveLeaves {
                    if let body = leaf.body { note(body, document + " (revision \(leaf.revisionID))") }
                }
                return true
            }
        }
        return found
    }
}
