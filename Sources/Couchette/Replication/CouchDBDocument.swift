/// Revisions in CouchDB's JSON shape, as `_bulk_get`, `_bulk_docs` and document GETs carry them:
/// the body with `_id`, `_rev`, `_deleted` and `_revisions: {"start": 3, "ids": ["c…", "b…", "a…"]}`
/// (the history, newest first, as digests under one starting generation).
enum CouchDBDocument {
    /// The JSON object for `revision`; `_revisions` only when `includeHistory`.
    static func json(_ revision: PeerRevision, includeHistory: Bool) -> Value {
        var object: [String: Value] = [:]
        if case .dictionary(let body) = revision.body { object = body }
        object["_id"] = .string(revision.id)
        object["_rev"] = .string(revision.revisionID)
        if revision.deleted { object["_deleted"] = .bool(true) }
        if includeHistory { object["_revisions"] = revisions(revision.history) }
        return .dictionary(object)
    }

    /// `{"start": N, "ids": [digests]}` for a history that is newest first.
    static func revisions(_ history: [String]) -> Value {
        let start = history.first.flatMap(RevisionID.generation(of:)) ?? 0
        let ids = history.map { Value.string(String(RevisionID.digest(of: $0))) }
        return .dictionary(["start": .int(Int64(start)), "ids": .array(ids)])
    }

    /// Reads a revision from its JSON object. Without `_revisions` the history is just `_rev`.
    /// - Throws: `.invalidParameter` naming the document when `_id` or `_rev` is missing or
    ///   malformed, or the object has other underscore fields.
    static func revision(from json: Value) throws -> PeerRevision {
        guard case .dictionary(var object) = json else {
            throw CouchetteError(.invalidParameter, "a document must be a JSON object, got \(JSON.string(from: json).prefix(80))")
        }
        guard case .string(let id)? = object.removeValue(forKey: "_id"), !id.isEmpty else {
            throw CouchetteError(.invalidParameter, "a document has no _id")
        }
        guard case .string(let revisionID)? = object.removeValue(forKey: "_rev"), RevisionID.generation(of: revisionID) != nil else {
            throw CouchetteError(.invalidParameter, "document '\(id)' has no valid _rev")
        }
        let deleted = object.removeValue(forKey: "_deleted")?.asBool ?? false
        var history = [revisionID]
        if let revisions = object.removeValue(forKey: "_revisions") {
            history = try self.history(revisions, id: id)
        }
        try stripUnderscoreFields(&object, id: id)
        return PeerRevision(id: id, revisionID: revisionID, deleted: deleted, body: .dictionary(object), history: history)
    }

    /// Removes the metadata fields Couchette does not keep; rejects unknown `_` fields as CouchDB does.
    /// - Throws: `.unsupported` for a document with attachments: Couchette has no blobs yet, and
    ///   dropping them would make a later edit delete them on the server.
    static func stripUnderscoreFields(_ object: inout [String: Value], id: String) throws {
        if case .dictionary(let attachments)? = object["_attachments"], !attachments.isEmpty {
            throw CouchetteError(.unsupported, "document '\(id)' has attachments (\(attachments.keys.sorted().joined(separator: ", "))), which Couchette does not support yet")
        }
        for key in object.keys where key.hasPrefix("_") {
            switch key {
            case "_attachments", "_conflicts", "_deleted_conflicts", "_local_seq", "_revs_info", "_id", "_rev", "_deleted", "_revisions":
                object.removeValue(forKey: key)
            default:
                throw CouchetteError(.invalidParameter, "document '\(id)' has the reserved field \(key)")
            }
        }
    }

    private static func history(_ revisions: Value, id: String) throws -> [String] {
        guard case .int(let start)? = revisions["start"], start > 0, case .array(let ids)? = revisions["ids"], !ids.isEmpty,
              ids.count <= start else {
            throw CouchetteError(.invalidParameter, "document '\(id)' has malformed _revisions")
        }
        return try ids.enumerated().map { offset, digest in
            guard case .string(let text) = digest, !text.isEmpty else {
                throw CouchetteError(.invalidParameter, "document '\(id)' has a non-string id in _revisions")
            }
            return "\(start - Int64(offset))-\(text)"
        }
    }
}
