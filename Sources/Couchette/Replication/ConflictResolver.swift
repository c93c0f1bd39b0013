/// Ends the conflicts a pull left behind: documents with more than one live leaf.
///
/// The default keeps the CouchDB winner and closes the other branches with tombstones; every
/// peer computes the same tombstone ids, so two peers resolving the same conflict converge.
/// A custom ``ConflictResolverProtocol`` sees the pulled revision as `remoteDocument` and the best
/// other live leaf as `localDocument`; its answer is kept as is when it is one of them, otherwise
/// written as a new revision on the winning branch.
struct ConflictResolver {
    let collection: Collection
    let resolver: (any ConflictResolverProtocol)?

    /// How often one document is re-read when local writes race the resolution.
    static let attempts = 10

    /// Resolves each document of `pulled` (ids and the revisions just pulled) that is in conflict.
    func resolve(_ pulled: [String: Set<String>]) async throws {
        for id in try collection.conflictedDocumentIDs(pulled.keys.sorted()) {
            for _ in 0..<Self.attempts {
                guard let resolution = try resolution(id: id, pulled: pulled[id] ?? []) else { break }
                if try await collection.resolveConflict(resolution) { break }
            }
        }
    }

    /// What to write for `id`, or nil when it is not in conflict.
    func resolution(id: String, pulled: Set<String>) throws -> ConflictResolution? {
        let tree = try collection.revisionTree(id: id)
        let live = tree.liveLeaves.sorted { RevisionID.isHigher($0.revisionID, than: $1.revisionID) }
        guard live.count > 1, let winner = tree.winner else { return nil }
        let leaves = Set(live.map(\.revisionID))
        guard let resolver else {
            return ConflictResolution(id: id, liveLeaves: leaves, keep: winner.revisionID, body: nil)
        }
        let remote = live.first { pulled.contains($0.revisionID) } ?? live[0]
        guard let local = live.first(where: { $0.revisionID != remote.revisionID }) else { return nil }
        let stored = try collection.storedRevisions([(id, local.revisionID), (id, remote.revisionID)])
        let documents = zip([local.revisionID, remote.revisionID], stored).map { revisionID, revision in
            revision.map { Document(id: id, revisionID: revisionID, sequence: 0, body: $0.body) }
        }
        let conflict = Conflict(documentID: id, localDocument: documents[0], remoteDocument: documents[1])
        guard let resolved = resolver.resolve(conflict: conflict) else {
            return ConflictResolution(id: id, liveLeaves: leaves, keep: nil, body: nil)
        }
        for document in documents.compactMap({ $0 }) where document.revisionID == resolved.revisionID && document.body == resolved.body {
            return ConflictResolution(id: id, liveLeaves: leaves, keep: document.revisionID, body: nil)
        }
        let winnerBody = winner.revisionID == local.revisionID ? documents[0]?.body : documents[1]?.body
        return ConflictResolution(
            id: id, liveLeaves: leaves, keep: winner.revisionID,
            body: resolved.body == winnerBody ? nil : resolved.body)
    }
}
