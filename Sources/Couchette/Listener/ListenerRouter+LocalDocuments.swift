import Foundation

/// `GET|PUT|DELETE /{db}/_local/{id}`: replication checkpoints, never replicated themselves.
///
/// As CouchDB 3.x does it (transcript `a03`), not as its API reference describes it: a `PUT`
/// makes no revision check — the stored revision becomes `0-(N+1)` for the `0-N` named by
/// `_revisions` (`start` 0), `_rev`, `?rev=` or `If-Match` (`0-1` when none is named), even when
/// it is stale; fields starting with `_` are not stored and never returned; a `DELETE` needs no
/// revision and answers `0-0`. CouchDB's replicator depends on it: from its second run on it
/// sends a checkpoint `_rev` its document parser took from `_revisions`. Read-only listeners
/// accept them too, so others can pull.
extension ListenerRouter {
    func localDocument(_ request: HTTPRequest, _ keyspace: Keyspace, id: String) async throws -> HTTPResponse {
        let collection = keyspace.collection
        switch request.method {
        case "PUT":
            guard case .dictionary(let object) = try ListenerRouter.jsonBody(request) else {
                throw ListenerError.badRequest("a _local document must be a JSON object")
            }
            let generation = try ListenerRouter.localGeneration(of: object, request, id: id)
            let rev = try await collection.writeLocalDocument(id: id, .dictionary(object), condition: .follows(generation: generation))
            return .json(ListenerRouter.okResult(id: "_local/\(id)", rev: rev), status: 201)
        case "DELETE":
            do {
                let rev = try await collection.writeLocalDocument(id: id, nil, condition: .follows(generation: nil))
                return .json(ListenerRouter.okResult(id: "_local/\(id)", rev: rev))
            } catch let error as CouchetteError where error.code == .notFound {
                return .error(404, "not_found", "missing")
            }
        default:
            guard let (body, rev) = try collection.localDocumentWithRevision(id: id), case .dictionary(var object) = body else {
                return .error(404, "not_found", "missing")
            }
            object["_id"] = .string("_local/\(id)")
            object["_rev"] = .string(rev)
            if request.query["revs"] == "true" {
                object["_revisions"] = .dictionary(["start": .int(0), "ids": .array([.string(String(rev.dropFirst(2)))])])
            }
            return .json(.dictionary(object))
        }
    }

    /// `GET /{db}/_local_docs`: every `_local` document as CouchDB lists them (`total_rows` and
    /// `offset` null).
    func localDocuments(_ keyspace: Keyspace) throws -> HTTPResponse {
        let rows: [Value] = try keyspace.collection.localDocumentRevisions().map { entry in
            .dictionary([
                "id": .string("_local/" + entry.id), "key": .string("_local/" + entry.id),
                "value": .dictionary(["rev": .string(entry.revisionID)]),
            ])
        }
        return .json(.dictionary(["total_rows": .null, "offset": .null, "rows": .array(rows)]))
    }

    /// A `_local` document written through `_bulk_docs` (`_id` `_local/…`), as a PUT would.
    func saveLocalDocument(_ json: Value, id: String, _ keyspace: Keyspace, _ request: HTTPRequest) async throws -> String {
        guard case .dictionary(let object) = json else { throw ListenerError.badRequest("a _local document must be a JSON object") }
        let generation = try ListenerRouter.localGeneration(of: object, request, id: id)
        if object["_deleted"]?.asBool == true {
            return try await keyspace.collection.writeLocalDocument(id: id, nil, condition: .follows(generation: generation))
        }
        return try await keyspace.collection.writeLocalDocument(id: id, json, condition: .follows(generation: generation))
    }

    /// The generation a `_local` PUT names, as CouchDB's document parser reads it: `_revisions`
    /// (which must start at 0) over `_rev` over `?rev=` over `If-Match`; nil for none.
    /// - Throws: `bad_request` "Invalid rev format" for anything but `0-N` (CouchDB answers 500).
    private static func localGeneration(of object: [String: Value], _ request: HTTPRequest, id: String) throws -> Int? {
        let invalid = ListenerError.badRequest("Invalid rev format: revisions of _local/\(id) are 0-N")
        if let revisions = object["_revisions"] {
            guard case .int(0)? = revisions["start"], case .array(let ids)? = revisions["ids"] else { throw invalid }
            guard case .string(let newest)? = ids.first else { return nil }
            guard let generation = LocalRevisionCondition.generation(of: "0-" + newest) else { throw invalid }
            return generation
        }
        let named: String? =
            if case .string(let rev)? = object["_rev"] {
                rev
            } else {
                request.query["rev"] ?? request.header("if-match").map { $0.trimmingCharacters(in: CharacterSet(charactersIn: "\" ")) }
            }
        guard let named else { return nil }
        guard let generation = LocalRevisionCondition.generation(of: named) else { throw invalid }
        return generation
    }
}
