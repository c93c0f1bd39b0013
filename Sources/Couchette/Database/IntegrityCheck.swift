/// Cross-checks documents, revision trees, the sequence index and live counts of every collection.
struct IntegrityCheck {
    let store: DocumentStore
    let catalog: [CollectionSpec]

    func run(_ txn: ReadTransaction) throws {
        let tables = store.tables
        for collection in catalog {
            let prefix = StoreLayout.collectionPrefix(collection.number)
            var live: UInt64 = 0
            var documents = 0
            try txn.scan(tables.documents, prefix: prefix) { key, value in
                let id = String(decoding: key[4...], as: UTF8.self)
                let record = try DocumentRecord(decoding: value)
                if !record.isDeleted { live += 1 }
                documents += 1
                let tree = try store.revisionTree(txn, collection, id, current: record)
                guard tree.winner?.revisionID == record.revisionID else {
                    throw fail(collection, "document '\(id)' revision \(record.revisionID) is not its tree's winner")
                }
                // Replication can leave conflicts: every live leaf but the winner keeps its body in the tree.
                for leaf in tree.liveLeaves where leaf.revisionID != record.revisionID && leaf.body == nil {
                    throw fail(collection, "document '\(id)' conflicting revision \(leaf.revisionID) has no body")
                }
                let indexed = try store.sequenceIndex.withEntry(txn, collection.number, record.sequence) { entryID, isDeleted in
                    String(decoding: entryID, as: UTF8.self) == id && isDeleted == record.isDeleted
                }
                guard indexed == true else {
                    throw fail(collection, "document '\(id)' has no matching entry in the sequence index")
                }
                if !record.isDeleted {
                    guard EncodedValue(bytes: record.body).isDictionary else {
                        throw fail(collection, "document '\(id)' body is not a dictionary")
                    }
                }
                return true
            }
            // A tree without its document would be resurrected by the next save of that id.
            try txn.scan(tables.revisions, prefix: prefix) { key, _ in
                guard try txn.get(tables.documents, key: Array(key)) != nil else {
                    throw fail(collection, "revision tree of '\(String(decoding: key[4...], as: UTF8.self))' has no document")
                }
                return true
            }
            // Also checks that the tail is well formed and follows the table.
            let sequences = try store.sequenceIndex.census(txn, collection.number).entries
            guard sequences == documents else {
                throw fail(collection, "\(sequences) sequence entries for \(documents) documents")
            }
            guard try store.liveCount(txn, collection) == live else {
                throw fail(collection, "stored count \(try store.liveCount(txn, collection)) but \(live) live documents")
            }
        }
    }

    private func fail(_ collection: CollectionSpec, _ problem: String) -> CouchetteError {
        CouchetteError(.corruption, "integrity check of \(collection.fullName): \(problem)")
    }
}
