import Foundation

/// `GET|PUT|DELETE /{db}/_local/{id}`: replication checkpoints, never replicated themselves.
///
/// CouchDB's API reference gives them the semantics of standard documents: a `PUT` replacing one
/// names its current `_rev` (in the body, `?rev=` or `If-Match`), a `PUT` creating one names none,
/// a `DELETE` names the current one; otherwise `409 conflict`. Revisions are `0-1`, `0-2`, …;
/// a deletion answers `0-0`. Read-only listeners accept them too, so others can pull.
extension ListenerRouter {
    func localDocument(_ request: HTTPRequest, _ keyspace: Keyspace, id: String) async throws -> HTTPResponse {
        let collection = keyspace.collection
        switch request.method {
        case "PUT":
            guard case .dictionary(var object) = try ListenerRouter.jsonBody(request) else {
                throw ListenerError.badRequest("a _local document must be a JSON object")
            }
            object.removeValue(forKey: "_id")
            let bodyRev: String? = if case .string(let rev)? = object.removeValue(forKey: "_rev") { rev } else { nil }
            let generation = try ListenerRouter.localGeneration(bodyRev ?? ListenerRouter.requestedRevision(request), id: id)
            guard let rev = try await collection.writeLocalDocument(id: id, .dictionary(object), condition: .expect(generation: generation)) else {
                return .error(409, "conflict", "Document update conflict.")
            }
            return .json(ListenerRouter.okResult(id: "_local/\(id)", rev: rev), status: 201)
        case "DELETE":
            let generation = try ListenerRouter.localGeneration(ListenerRouter.requestedRevision(request), id: id)
            do {
                guard let rev = try await collection.writeLocalDocument(id: id, nil, condition: .expect(generation: generation)) else {
                    return .error(409, "conflict", "Document update conflict.")
                }
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
            return .json(.dictionary(object))
        }
    }

    /// `?rev=` or an `If-Match` header (quotes removed), as CouchDB reads them for documents.
    private static func requestedRevision(_ request: HTTPRequest) -> String? {
        if let rev = request.query["rev"] { return rev }
        guard let match = request.header("if-match") else { return nil }
        return match.trimmingCharacters(in: CharacterSet(charactersIn: "\" "))
    }

    /// The generation of a `0-N` revision; nil for none.
    private static func localGeneration(_ rev: String?, id: String) throws -> Int? {
        guard let rev else { return nil }
        guard let generation = LocalRevisionCondition.generation(of: rev) else {
            throw ListenerError.badRequest("Invalid rev format '\(rev)' for _local/\(id): local revisions are 0-N")
        }
        return generation
    }
}
