/// The replication endpoints (`_revs_diff`, `_bulk_get`, `_bulk_docs`): thin JSON
/// translations over the keyspace's ``LocalPeer``, in the request and response shapes of the
/// CouchDB API reference.
extension ListenerRouter {
    /// `POST /{db}/_revs_diff`: `{"id": ["rev", …]}` → `{"id": {"missing": […], "possible_ancestors": […]}}`.
    func revsDiff(_ request: HTTPRequest, _ keyspace: Keyspace) async throws -> HTTPResponse {
        guard case .dictionary(let object) = try ListenerRouter.jsonBody(request) else {
            throw ListenerError.badRequest("_revs_diff expects a JSON object of document ids to revision lists")
        }
        var revisions: [String: [String]] = [:]
        for (id, list) in object {
            guard case .array(let entries) = list else { throw ListenerError.badRequest("revisions of '\(id)' must be an array") }
            revisions[id] = try entries.map {
                guard case .string(let rev) = $0 else { throw ListenerError.badRequest("revisions of '\(id)' must be strings") }
                return rev
            }
        }
        let diff = try await keyspace.peer.revsDiff(revisions)
        return .json(
            .dictionary(
                diff.mapValues { result in
                    var entry: [String: Value] = ["missing": .array(result.missing.map(Value.string))]
                    if !result.possibleAncestors.isEmpty {
                        entry["possible_ancestors"] = .array(result.possibleAncestors.map(Value.string))
                    }
                    return .dictionary(entry)
                }))
    }

    /// `POST /{db}/_bulk_get?revs=true&latest=true`: `{"docs": [{"id", "rev", "atts_since"}]}` →
    /// `{"results": [{"id", "docs": [{"ok": doc} | {"error": {…}}]}]}`, one result per requested
    /// document in request order. A request without `rev` gets the current revision; with
    /// `latest=true` a superseded revision is answered with the leaves that descend from it.
    /// Blob and attachment content newer than the entry's `atts_since` comes inline as base64
    /// when `attachments=true` or the entry has `atts_since` (as CouchDB 3.5 answers, transcript
    /// b02); otherwise every attachment is a stub. With `Accept: multipart/mixed` the same
    /// revisions come as the parts of a `multipart/mixed` body (transcript a10), content as
    /// `"follows": true` attachment parts streamed from the blob store.
    func bulkGet(_ request: HTTPRequest, _ keyspace: Keyspace) async throws -> HTTPResponse {
        guard case .array(let docs)? = try ListenerRouter.jsonBody(request)["docs"] else {
            throw ListenerError.badRequest("_bulk_get expects {\"docs\": [{\"id\": …, \"rev\": …}]}")
        }
        let latest = request.query["latest"] == "true"
        let requests: [RevisionRequest] = try docs.map { entry in
            guard case .string(let id)? = entry["id"] else {
                throw ListenerError.badRequest("every _bulk_get entry needs an \"id\" string")
            }
            let rev: String
            if case .string(let given)? = entry["rev"] {
                rev = given
            } else {
                // CouchDB names a missing document's revision "undefined".
                rev = try keyspace.collection.storedState(id: id).revisionID ?? "undefined"
            }
            var known: [String] = []
            if case .array(let since)? = entry["atts_since"] { known = since.compactMap { if case .string(let r) = $0 { r } else { nil } } }
            return RevisionRequest(id: id, revisionID: rev, knownAncestors: known, latest: latest)
        }
        let includeHistory = request.query["revs"] == "true"
        let allContent = request.query["attachments"] == "true"
        let fetched = try await keyspace.peer.bulkGetGrouped(requests).enumerated().map { index, fetches in
            fetches.map { fetch -> RevisionFetch in
                guard case .found(var revision) = fetch, !allContent, requests[index].knownAncestors.isEmpty else { return fetch }
                revision.attachments = [:]
                return .found(revision)
            }
        }
        if ListenerRouter.acceptsMultipartMixed(request) {
            // CouchDB 3.x: the revisions of every entry in order, as the parts of one
            // multipart/mixed body (see ``MultipartDocumentWriter/writeMixed``); content streams
            // from the blob files as the client takes it.
            let boundary = MultipartDocumentWriter.makeBoundary()
            let all = fetched.flatMap { $0 }
            return HTTPResponse(
                status: 200, headers: [("Content-Type", MultipartDocumentWriter.contentType("mixed", boundary: boundary))],
                body: .stream { stream in
                    try? await MultipartDocumentWriter.writeMixed(
                        all, includeHistory: includeHistory, style: .bulkGet(errorBody: ListenerRouter.bulkGetError), boundary: boundary
                    ) { bytes in
                        guard await stream.send(bytes) else { throw CancellationError() }
                    }
                    stream.finish()
                })
        }
        let results: [Value] = zip(requests, fetched).map { request, fetches in
            let entries: [Value] = fetches.map { fetch in
                switch fetch {
                case .found(let revision): .dictionary(["ok": CouchDBDocument.json(revision, includeHistory: includeHistory)])
                case .failed(let id, let rev, let error): .dictionary(["error": ListenerRouter.bulkGetError(id: id, rev: rev, error)])
                }
            }
            return .dictionary(["id": .string(request.id), "docs": .array(entries)])
        }
        return .json(.dictionary(["results": .array(results)]))
    }

    /// A revision `_bulk_get` cannot return, as CouchDB names it: `{"id", "rev", "error", "reason"}`.
    private static func bulkGetError(id: String, rev: String, _ error: CouchetteError) -> Value {
        .dictionary([
            "id": .string(id), "rev": .string(rev), "error": .string(HTTPResponse.couchDBError(for: error).name),
            "reason": .string(error.code == .notFound ? "missing" : error.message),
        ])
    }

    /// `POST /{db}/_bulk_docs`: with `"new_edits": false` revisions are grafted with their
    /// `_revisions` history and only failures are listed; otherwise each document is saved as a
    /// new revision and every one gets `{"ok", "id", "rev"}` or `{"id", "error", "reason"}`.
    func bulkDocs(_ request: HTTPRequest, _ keyspace: Keyspace) async throws -> HTTPResponse {
        let body = try ListenerRouter.jsonBody(request)
        guard case .array(let docs)? = body["docs"] else {
            throw ListenerError.badRequest("_bulk_docs expects {\"docs\": [...]}")
        }
        if let newEdits = body["new_edits"], newEdits == .bool(false) {
            var failures: [Value] = []
            var revisions: [PeerRevision] = []
            for doc in docs {
                do {
                    revisions.append(try CouchDBDocument.revision(from: doc))
                } catch {
                    failures.append(ListenerRouter.failure(id: doc["_id"], rev: doc["_rev"], error))
                }
            }
            let errors = try await keyspace.peer.bulkDocs(revisions)
            failures += errors.map { ListenerRouter.failure(id: .string($0.id), rev: $0.revisionID.map(Value.string), $0.error) }
            return .json(.array(failures), status: 201)
        }
        var results: [Value] = []
        for var doc in docs {
            // A document without _id gets one here, so that the answer can name it.
            if case .dictionary(var object) = doc, object["_id"] == nil {
                object["_id"] = .string(DocumentIDGenerator.make())
                doc = .dictionary(object)
            }
            do {
                let id = ListenerRouter.idText(doc["_id"])
                if id.hasPrefix("_local/") {
                    let rev = try await saveLocalDocument(doc, id: String(id.dropFirst(7)), keyspace, request)
                    results.append(.dictionary(["ok": .bool(true), "id": .string(id), "rev": .string(rev)]))
                    continue
                }
                if ListenerRouter.hasAttachments(doc) { throw ListenerRouter.attachmentsRefused(id: id) }
                let rev = try await save(doc, keyspace)
                results.append(.dictionary(["ok": .bool(true), "id": doc["_id"] ?? .null, "rev": .string(rev)]))
            } catch {
                results.append(ListenerRouter.failure(id: doc["_id"], rev: nil, error))
            }
        }
        return .json(.array(results), status: 201)
    }

    /// A document's `_id` for messages ("" when it has none).
    private static func idText(_ id: Value?) -> String {
        if case .string(let text)? = id { return text }
        return ""
    }

    private static func failure(id: Value?, rev: Value?, _ error: any Error) -> Value {
        let (_, name) = HTTPResponse.couchDBError(for: error)
        let reason = (error as? CouchetteError)?.message ?? (error as? ListenerError)?.reason ?? "\(error)"
        var entry: [String: Value] = ["id": id ?? .null, "error": .string(name), "reason": .string(reason)]
        if let rev { entry["rev"] = rev }
        return .dictionary(entry)
    }
}
