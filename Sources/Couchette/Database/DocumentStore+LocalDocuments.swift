/// Which revision a `_local` write follows.
///
/// CouchDB 3.x makes no revision check on `_local` documents: the stored revision becomes
/// `0-(N+1)` for the `0-N` the writer names (`0-1` when it names none), whatever is stored, and a
/// deletion needs no revision at all (transcript `a03`). Its replicator relies on that: it sends
/// the `_rev` it last read, which may be stale.
enum LocalRevisionCondition: Sendable, Equatable {
    /// One past the stored revision: the replication engine's own checkpoints in this process.
    case any
    /// One past this generation (nil: `0-1`), whatever is stored: a CouchDB client's write.
    case follows(generation: Int?)

    /// The generation of a local revision id `0-N`, or nil when it is not of that form or N is
    /// above ``RevisionID/maximumGeneration`` (so the next write's N + 1 cannot overflow).
    static func generation(of revisionID: String) -> Int? {
        guard revisionID.hasPrefix("0-"), let number = Int(revisionID.dropFirst(2)),
            (0...RevisionID.maximumGeneration).contains(number)
        else { return nil }
        return number
    }
}

/// `_local` documents live in the `meta` table under `local:` + collection + id, as the encoded
/// body with its revision in `_rev` (entries written before revisions were kept count as `0-1`).
extension DocumentStore {
    /// The body (without `_rev`) and revision of the `_local` document `id`, or nil.
    func localDocument(_ txn: ReadTransaction, _ collection: CollectionSpec, _ id: String) throws -> (body: Value, revisionID: String)? {
        guard let bytes = try txn.getBytes(tables.meta, key: StoreLayout.localDocumentKey(collection.number, id)) else { return nil }
        guard case .dictionary(var object) = EncodedValue(bytes: bytes).decode() else { return (.dictionary([:]), "0-1") }
        let stored = object.removeValue(forKey: "_rev")
        let generation: Int = if case .string(let rev)? = stored { LocalRevisionCondition.generation(of: rev) ?? 1 } else { 1 }
        return (.dictionary(object), "0-\(generation)")
    }

    /// Every `_local` document of a collection as (id, revision), in id order.
    func localDocumentRevisions(_ txn: ReadTransaction, _ collection: CollectionSpec) throws -> [(id: String, revisionID: String)] {
        let prefix = StoreLayout.localDocumentPrefix(collection.number)
        var found: [(String, String)] = []
        try txn.scan(tables.meta, prefix: prefix) { key, value in
            let id = String(decoding: key[prefix.count...], as: UTF8.self)
            var generation = 1
            if case .dictionary(let object) = EncodedValue(bytes: Array(value)).decode(), case .string(let rev)? = object["_rev"] {
                generation = LocalRevisionCondition.generation(of: rev) ?? 1
            }
            found.append((id, "0-\(generation)"))
            return true
        }
        return found
    }

    /// Writes (nil: removes) a `_local` document: `.saved` with the new revision (`0-0` for a
    /// removal, sequence 0: local documents have none). Fields starting with `_` are not stored.
    /// - Throws: `.notFound` removing a document that does not exist under `.follows`, as CouchDB.
    func putLocal(
        _ txn: WriteTransaction, _ collection: CollectionSpec, _ id: String,
        body: Value?, condition: LocalRevisionCondition
    ) throws -> WriteOutcome {
        let key = StoreLayout.localDocumentKey(collection.number, id)
        let current = try localDocument(txn, collection, id).flatMap { LocalRevisionCondition.generation(of: $0.revisionID) }
        if case .follows = condition, body == nil, current == nil {
            throw CouchetteError(.notFound, "local document '\(id)' not found in \(collection.fullName)")
        }
        guard let body else {
            if current != nil { try txn.delete(tables.meta, key: key) }
            return .saved(revisionID: "0-0", sequence: 0)
        }
        guard case .dictionary(var object) = body else {
            throw CouchetteError(.invalidParameter, "local document '\(id)' must be a JSON object")
        }
        let previous: Int? =
            switch condition {
            case .any: current
            case .follows(let generation): generation
            }
        let revisionID = "0-\((previous ?? 0) + 1)"
        for key in object.keys where key.hasPrefix("_") { object.removeValue(forKey: key) }
        object["_rev"] = .string(revisionID)
        try txn.put(tables.meta, key: key, value: try ValueEncoder.encode(.dictionary(object)))
        return .saved(revisionID: revisionID, sequence: 0)
    }
}
