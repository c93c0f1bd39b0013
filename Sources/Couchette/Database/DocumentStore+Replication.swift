/// One entry of a collection's change list, as replication reads it: the document's latest
/// sequence and every leaf of its revision tree (CouchDB's `style=all_docs`).
struct StoredChange: Sendable, Equatable {
    var sequence: UInt64
    var id: String
    var leafRevisions: [String]
    var isDeleted: Bool
}

/// One stored revision with its ancestry, newest first (starting with the revision itself).
struct StoredRevision: Sendable {
    var isDeleted: Bool
    var body: [UInt8]
    var history: [String]
}

extension DocumentStore {
    /// The documents changed after `since`, in sequence order, at most `limit` of them, and the
    /// sequence a follow-up call should start after: the last one returned when the limit was
    /// reached, else the collection's last sequence.
    func changes(
        _ txn: ReadTransaction, _ collection: CollectionSpec, since: UInt64, limit: Int,
        documentIDs: Set<String>?
    ) throws -> (changes: [StoredChange], lastSequence: UInt64) {
        var changes: [StoredChange] = []
        var last = since
        var limitReached = false
        try forEachChange(txn, collection, after: since, through: .max) { sequence, id, isDeleted in
            last = sequence
            if let documentIDs, !documentIDs.contains(id) { return true }
            let tree = try revisionTree(txn, collection, id)
            changes.append(
                StoredChange(
                    sequence: sequence, id: id, leafRevisions: tree.leafIndices.map { tree.nodes[$0].revisionID },
                    isDeleted: isDeleted))
            if changes.count >= limit {
                limitReached = true
                return false
            }
            return true
        }
        return (changes, limitReached ? last : max(last, try lastSequence(txn, collection)))
    }

    /// Calls `body` with the sequence, document id and deleted flag of every entry of the
    /// sequence index of `collection` after `sequence` up to `last`, in order, until it returns false.
    func forEachChange(
        _ txn: ReadTransaction, _ collection: CollectionSpec, after sequence: UInt64, through last: UInt64,
        _ body: (UInt64, String, Bool) throws -> Bool
    ) throws {
        try sequenceIndex.forEachEntry(txn, collection.number, after: sequence, through: last) { sequence, id, isDeleted in
            try body(sequence, String(decoding: id, as: UTF8.self), isDeleted)
        }
    }

    /// For each document, the given revisions this collection lacks, and the leaves it has that
    /// may be their ancestors (lower generations), so the sender can send only the new part.
    func missingRevisions(
        _ txn: ReadTransaction, _ collection: CollectionSpec,
        _ revisions: [String: [String]]
    ) throws -> [String: (missing: [String], possibleAncestors: [String])] {
        var result: [String: (missing: [String], possibleAncestors: [String])] = [:]
        for (id, candidates) in revisions {
            let tree = try revisionTree(txn, collection, id)
            let missing = candidates.filter { tree.index(of: $0) == nil }
            guard !missing.isEmpty else { continue }
            let highest = missing.compactMap(RevisionID.generation(of:)).max() ?? 0
            let ancestors = tree.leafIndices.map { tree.nodes[$0].revisionID }
                .filter { (RevisionID.generation(of: $0) ?? 0) < highest }
            result[id] = (missing, ancestors)
        }
        return result
    }

    /// A revision of `id` (the winner, another leaf, or a tombstone) with its history; nil when
    /// the tree does not know it or no longer holds its body (an ancestor).
    func revision(_ txn: ReadTransaction, _ collection: CollectionSpec, _ id: String, _ revisionID: String) throws -> StoredRevision? {
        let tree = try revisionTree(txn, collection, id)
        guard let position = tree.index(of: revisionID) else { return nil }
        let node = tree.nodes[position]
        let history = tree.history(of: revisionID)
        if node.isDeleted { return StoredRevision(isDeleted: true, body: Document.emptyBody, history: history) }
        if let body = node.body { return StoredRevision(isDeleted: false, body: body, history: history) }
        if let current = try record(txn, collection, id), current.revisionID == revisionID {
            return StoredRevision(isDeleted: false, body: current.body, history: history)
        }
        return nil
    }
}
