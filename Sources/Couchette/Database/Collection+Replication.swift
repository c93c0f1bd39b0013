/// The seams replication builds on: changes with all leaves, revision lookups, grafting
/// replicated revisions, closing conflicts and `_local` documents. Reads run in a snapshot on
/// the caller's thread; writes go through the database's group commit like local saves, so
/// change feeds and live queries see replicated documents as they see local ones.
extension Collection {
    /// The last sequence assigned in this collection (0 when empty).
    func lastSequence() throws -> UInt64 {
        try core.checkUsable(spec)
        return try core.read { try core.store.lastSequence($0, spec) }
    }

    func replicationChanges(since: UInt64, limit: Int, documentIDs: Set<String>?) throws -> (changes: [StoredChange], lastSequence: UInt64)
    {
        try core.checkUsable(spec)
        return try core.read { try core.store.changes($0, spec, since: since, limit: max(1, limit), documentIDs: documentIDs) }
    }

    func missingRevisions(_ revisions: [String: [String]]) throws -> [String: (missing: [String], possibleAncestors: [String])] {
        try core.checkUsable(spec)
        return try core.read { try core.store.missingRevisions($0, spec, revisions) }
    }

    /// Several revisions read in one snapshot; nil where the revision is unknown or has no body.
    func storedRevisions(_ requests: [(id: String, revisionID: String)]) throws -> [StoredRevision?] {
        try core.checkUsable(spec)
        return try core.read { txn in try requests.map { try core.store.revision(txn, spec, $0.id, $0.revisionID) } }
    }

    /// CouchDB's `latest=true`: the leaves that descend from `revisionID`; `revisionID` itself
    /// when it is a leaf or unknown (so that the fetch reports it missing).
    func latestLeaves(id: String, from revisionID: String) throws -> [String] {
        let tree = try revisionTree(id: id)
        let leaves = tree.leafIndices.map { tree.nodes[$0].revisionID }
        if leaves.contains(revisionID) { return [revisionID] }
        let descendants = leaves.filter { tree.history(of: $0).contains(revisionID) }
        return descendants.isEmpty ? [revisionID] : descendants
    }

    /// Which of `ids` have more than one live leaf, read in one snapshot.
    func conflictedDocumentIDs(_ ids: [String]) throws -> [String] {
        try core.checkUsable(spec)
        return try core.read { txn in try ids.filter { try core.store.revisionTree(txn, spec, $0).liveLeaves.count > 1 } }
    }

    func revisionTree(id: String) throws -> RevisionTree {
        try core.checkUsable(spec)
        return try core.read { try core.store.revisionTree($0, spec, id) }
    }

    /// Grafts replicated revisions in one commit; each outcome is `.saved` (accepted) or `.done`
    /// (already known).
    func graft(_ revisions: [GraftedRevision]) async throws -> [WriteOutcome] {
        try core.checkUsable(spec)
        guard !revisions.isEmpty else { return [] }
        return try await database.perform(PendingWrite(revisions.map { .graft(spec, $0) }))
    }

    /// Writes a conflict resolution; false when the document's leaves changed meanwhile.
    func resolveConflict(_ resolution: ConflictResolution) async throws -> Bool {
        try core.checkUsable(spec)
        let outcomes = try await database.perform(PendingWrite([.resolveConflict(spec, resolution)]))
        return outcomes.first != .conflict
    }

    /// The `_local` document `id` without `_rev`, or nil.
    func localDocument(id: String) throws -> Value? {
        try localDocumentWithRevision(id: id)?.body
    }

    /// The `_local` document `id` (body without `_rev`) and its revision `0-N`, or nil.
    func localDocumentWithRevision(id: String) throws -> (body: Value, revisionID: String)? {
        try core.checkUsable(spec)
        return try core.read { try core.store.localDocument($0, spec, id) }
    }

    /// Every `_local` document's id and revision `0-N`, in id order.
    func localDocumentRevisions() throws -> [(id: String, revisionID: String)] {
        try core.checkUsable(spec)
        return try core.read { try core.store.localDocumentRevisions($0, spec) }
    }

    /// Stores (nil: removes) the `_local` document `id` whatever its revision: the replication
    /// engine's checkpoints, whose ids only one replicator writes.
    func putLocalDocument(id: String, _ body: Value?) async throws {
        try await writeLocalDocument(id: id, body, condition: .any)
    }

    /// Stores (nil: removes) the `_local` document `id` and returns its new revision (`0-0` after
    /// a removal).
    /// - Throws: `.invalidParameter` for an id of 0 or more than 400 bytes or a body that is not an
    ///   object; `.notFound` removing a missing document under `.follows`.
    @discardableResult
    func writeLocalDocument(id: String, _ body: Value?, condition: LocalRevisionCondition) async throws -> String {
        try core.checkUsable(spec)
        guard !id.isEmpty, id.utf8.count <= 400 else {
            throw CouchetteError(.invalidParameter, "local document id '\(id)' must be 1 to 400 bytes long")
        }
        let outcomes = try await database.perform(PendingWrite([.putLocal(spec, id: id, body: body, condition: condition)]))
        guard case .saved(let revision, _)? = outcomes.first else {
            throw CouchetteError(.corruption, "writing local document '\(id)' in \(spec.fullName) did not complete")
        }
        return revision.text
    }
}

extension Collection {
    /// The bytes stored for document `id`: its current record and its revision tree (0 when it has
    /// none of its own). For the benchmark's storage-cost rows, not an application API.
    @_spi(Benchmarks)
    public func storedBytes(id: String) throws -> (record: Int, revisionTree: Int) {
        try core.checkUsable(spec)
        return try core.read { txn in
            let key = StoreLayout.documentKey(spec.number, id)
            return (
                try txn.get(core.store.tables.documents, key: key)?.count ?? 0,
                try txn.get(core.store.tables.revisions, key: key)?.count ?? 0
            )
        }
    }
}
