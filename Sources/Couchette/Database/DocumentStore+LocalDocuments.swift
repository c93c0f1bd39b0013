/// Which revision a `_local` write expects to replace.
///
/// CouchDB documents `PUT`/`DELETE /{db}/_local/{id}` as "identical to a standard document":
/// replacing an existing one needs its current `_rev`, creating one must not name a `_rev`.
/// Local revisions are `0-1`, `0-2`, … (a deletion answers `0-0`).
enum LocalRevisionCondition: Sendable, Equatable {
    /// Overwrite whatever is there: the replication engine's own checkpoints in this process.
    case any
    /// Replace exactly this revision's generation; nil: the document must not exist yet.
    case expect(generation: Int?)

    /// The generation of a local revision id `0-N`, or nil when it is not of that form or N is
    /// above ``RevisionID/maximumGeneration`` (so the next write's N + 1 cannot overflow).
    static func generation(of revisionID: String) -> Int? {
        guard revisionID.hasPrefix("0-"), let number = Int(revisionID.dropFirst(2)),
              (0...RevisionID.maximumGeneration).contains(number) else { return nil }
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

    /// Writes (nil: removes) a `_local` document when `condition` holds: `.saved` with the new
    /// revision (`0-0` for a removal, sequence 0: local documents have none), else `.conflict`.
    /// - Throws: `.notFound` removing a document that does not exist under a `.expect` condition.
    func putLocal(_ txn: WriteTransaction, _ collection: CollectionSpec, _ id: String,
                  body: Value?, condition: LocalRevisionCondition) throws -> WriteOutcome {
        let key = StoreLayout.localDocumentKey(collection.number, id)
        let current = try localDocument(txn, collection, id).flatMap { LocalRevisionCondition.generation(of: $0.revisionID) }
        if case .expect(let expected) = condition {
            if body == nil && current == nil {
                throw CouchetteError(.notFound, "local document '\(id)' not found in \(collection.fullName)")
            }
            guard expected == current else { return .conflict }
        }
        guard let body else {
            if current != nil { try txn.delete(tables.meta, key: key) }
            return .saved(revisionID: "0-0", sequence: 0)
        }
        guard case .dictionary(var object) = body else {
            throw CouchetteError(.invalidParameter, "local document '\(id)' must be a JSON object")
        }
        let revisionID = "0-\((current ?? 0) + 1)"
        object["_rev"] = .string(revisionID)
        try txn.put(tables.meta, key: key, value: try ValueEncoder.encode(.dictionary(object)))
        return .saved(revisionID: revisionID, sequence: 0)
    }
}
