extension Database {
    /// Builds a full-text index: documents are read and tokenized in read snapshots (writers go
    /// on meanwhile, indexing their own documents), and each batch's postings are written in one
    /// short write transaction, term by term in key order.
    func buildFullText(_ name: String, _ definition: IndexDefinition, in spec: CollectionSpec) async throws {
        let index = try CompiledIndex(name: name, definition: definition, collection: spec)
        var position: UInt64 = 0  // the sequence read last
        while true {
            try reader.checkUsable(spec)
            let after = position
            let batch = try reader.read { try $0.collectFullText(spec, index, after: after) }
            let current = try writeIndexes(in: spec) { txn, indexes -> Bool in
                // The index may have been dropped or replaced meanwhile: then there is nothing to do.
                guard try indexes.definitions(txn, spec).first(where: { $0.name == name })?.definition == definition else {
                    return false
                }
                try indexes.applyFullText(txn, spec, index, batch)
                if batch.isLast { try indexes.markReady(txn, spec, name, definition) }
                return true
            }
            guard current, !batch.isLast else { return }
            position = batch.last
            await Task.yield()
        }
    }
}
