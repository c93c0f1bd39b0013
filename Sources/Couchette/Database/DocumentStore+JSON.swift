extension DocumentStore {
    /// Writes documents saved as JSON (``Batch/save(id:json:in:concurrencyControl:)``): for each
    /// one, what ``writeRevision(_:_:_:body:deleting:base:control:precomputed:)`` writes for a `MutableDocument`
    /// saved without a base revision, in one pass over the batch's buffers.
    ///
    /// A document that does not exist yet (the bulk case) takes one LMDB put that both looks its
    /// key up and reserves its record (``WriteTransaction/reserveNew(_:key:count:)``), its body
    /// copied once into the reserved bytes under the revision id hashed on the caller's side, and
    /// one sequence entry (appended to the `sequences` table, for more than a tail holds:
    /// ``SequenceIndex/bypassTail(_:_:)``); no array, string or record value is made for it unless
    /// indexes or commit observers need one. The live count changes once for the whole batch. A
    /// document that exists goes through the general path, which builds on its current revision.
    ///
    /// Returns the sequences and revisions written, for the objects a batch tracks: a first
    /// sequence, and only the documents that did not take the next one as new documents.
    ///
    /// - Throws: `.conflict` for an existing live document under `.failOnConflict` (the batch is
    ///   atomic: nothing of it is written).
    func saveJSON(_ context: WriteContext, _ documents: JSONDocumentBatch) throws -> JSONDocumentBatch.Written {
        let txn = context.txn
        let collection = documents.collection
        let indexed = !(try txn.isEmpty(tables.indexes))
        var key = StoreLayout.collectionPrefix(collection.number)
        let prefixLength = key.count
        key.reserveCapacity(prefixLength + StoreLayout.maximumDocumentIDLength)
        let sequences = sequenceIndex
        // Many entries go straight to the table's end, not one by one through the tail.
        if documents.count > SequenceTail.maximumEntries { try sequences.bypassTail(context, collection.number) }
        var added: Int64 = 0
        defer { context.adjustCount(collection, by: added) }
        var written = JSONDocumentBatch.Written()
        var index = -1
        try documents.forEach { id, body, newDigest in
            index += 1
            key.removeSubrange(prefixLength...)
            key.append(contentsOf: id)
            let size = DocumentRecord.packedSize(bodyCount: body.count)
            let reserved = try key.withUnsafeBytes { try txn.reserveNew(tables.documents, key: $0, count: size) }
            guard let reserved else {
                let outcome = try saveExisting(
                    context, collection, String(decoding: id, as: UTF8.self), body: body, control: documents.control)
                if case .saved(let revision, let sequence) = outcome {
                    if index == 0 { written.firstSequence = sequence }
                    written.others.append(.init(index: index, revision: revision, sequence: sequence))
                }
                return
            }
            let sequence = try context.nextSequence(collection)
            if index == 0 {
                written.firstSequence = sequence
            } else if sequence != written.firstSequence &+ UInt64(index) {
                written.others.append(.init(index: index, revision: .packed(generation: 1, digest: newDigest), sequence: sequence))
            }
            DocumentRecord.encodeLive(sequence: sequence, generation: 1, digest: newDigest, body: body, into: reserved)
            added += 1
            try sequences.replace(context, collection.number, removing: nil, adding: sequence, isDeleted: false, id: id)
            guard indexed || context.recordsIDs else { return }
            let idText = String(decoding: id, as: UTF8.self)
            if indexed {
                let record = DocumentRecord(
                    isDeleted: false, sequence: sequence, expiration: 0, revision: .packed(generation: 1, digest: newDigest),
                    body: Array(body))
                try indexes.update(txn, collection, idText, old: nil, new: record)
            }
            context.recordChange(collection, idText, replacing: nil)
        }
        return written
    }

    /// Saves a JSON document whose id is taken: a new revision of the current one, as a
    /// `MutableDocument` saved without reading it would be.
    private func saveExisting(
        _ context: WriteContext, _ collection: CollectionSpec, _ id: String, body: UnsafeRawBufferPointer, control: ConcurrencyControl
    ) throws -> WriteOutcome {
        let outcome = try writeRevision(context, collection, id, body: Array(body), deleting: false, base: nil, control: control)
        if outcome == .conflict {
            throw CouchetteError(.conflict, "batch refused: document '\(id)' in \(collection.fullName) already exists")
        }
        return outcome
    }
}
