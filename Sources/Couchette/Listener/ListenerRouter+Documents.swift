/// Plain document reads and writes (`GET|PUT|DELETE /{db}/{docid}`, `_bulk_docs` with
/// `new_edits: true`, `_all_docs`): these go through the collection's normal write path, so a
/// write from HTTP behaves exactly like ``Collection/save(document:concurrencyControl:)``.
extension ListenerRouter {
    func document(_ request: HTTPRequest, _ keyspace: Keyspace, id: String) async throws -> HTTPResponse {
        try ListenerRouter.validateDocumentID(id)
        switch request.method {
        case "PUT":
            if ListenerRouter.isMultipart(request) { return try await putMultipart(request, keyspace, id: id) }
            var json = try ListenerRouter.jsonBody(request)
            guard case .dictionary(var object) = json else { throw ListenerError.badRequest("Document must be a JSON object") }
            if let bodyID = object["_id"], bodyID != .string(id) {
                throw ListenerError.badRequest("the _id in the body does not match the document id '\(id)' in the URL")
            }
            object["_id"] = .string(id)
            if let rev = request.query["rev"] { object["_rev"] = .string(rev) }
            json = .dictionary(object)
            if request.query["new_edits"] == "false" {
                let revision = try CouchDBDocument.revision(from: json)
                if let failure = try await keyspace.peer.bulkDocs([revision]).first { throw failure.error }
                return .json(ListenerRouter.okResult(id: id, rev: revision.revisionID), status: 201)
            }
            if ListenerRouter.hasAttachments(json) { throw ListenerRouter.attachmentsRefused(id: id) }
            let saved = try await save(json, keyspace)
            return .json(ListenerRouter.okResult(id: id, rev: saved), status: 201)
        case "DELETE":
            guard let rev = request.query["rev"] else {
                throw CouchetteError(.conflict, "deleting document '\(id)' needs ?rev= with its current revision")
            }
            let saved = try await save(.dictionary(["_id": .string(id), "_rev": .string(rev), "_deleted": .bool(true)]), keyspace)
            return .json(ListenerRouter.okResult(id: id, rev: saved))
        default:
            return try await readDocument(request, keyspace, id: id)
        }
    }

    /// Writes one document from its CouchDB JSON (`_rev` is the base revision, `_deleted` deletes)
    /// and returns the new revision id.
    /// - Throws: `.conflict` when `_rev` is not the current revision; `.notFound` deleting a
    ///   missing document; `.invalidParameter` for a malformed body.
    func save(_ json: Value, _ keyspace: Keyspace) async throws -> String {
        guard case .dictionary(var object) = json else { throw ListenerError.badRequest("Document must be a JSON object") }
        let id: String
        if case .string(let given)? = object["_id"] { id = given } else { id = DocumentIDGenerator.make() }
        try ListenerRouter.validateDocumentID(id)
        var base: String?
        if let rev = object["_rev"] {
            guard case .string(let text) = rev, RevisionID.generation(of: text) != nil else {
                throw ListenerError.badRequest("Invalid rev format for document '\(id)'")
            }
            base = text
        }
        let deleted = object["_deleted"]?.asBool ?? false
        try CouchDBDocument.stripUnderscoreFields(&object, id: id)
        let spec = keyspace.collection.spec
        try keyspace.collection.reader.checkUsable(spec)
        let operation: WriteOperation =
            deleted
            ? .delete(spec, id: id, base: base, control: .failOnConflict)
            : .save(spec, id: id, body: try ValueEncoder.encode(.dictionary(object)), base: base, control: .failOnConflict)
        let outcomes = try await keyspace.collection.database.perform(PendingWrite([operation]))
        guard case .saved(let revision, _)? = outcomes.first else {
            throw CouchetteError(.conflict, "Document update conflict: '\(id)' is not at revision \(base ?? "(none)")")
        }
        return revision.text
    }

    /// What a document read sends of blob and attachment content: inline base64 with
    /// `attachments=true` (only what is newer than `atts_since`), else stubs.
    struct ContentRequest {
        let inline: Bool
        let since: [String]

        init(_ request: HTTPRequest) throws {
            inline = request.query["attachments"] == "true"
            guard let text = request.query["atts_since"] else {
                since = []
                return
            }
            guard case .array(let list) = try ListenerRouter.parseJSON(text, what: "atts_since") else {
                throw ListenerError.badRequest("atts_since must be a JSON array of revision ids")
            }
            since = list.compactMap { if case .string(let rev) = $0 { rev } else { nil } }
        }
    }

    private func readDocument(_ request: HTTPRequest, _ keyspace: Keyspace, id: String) async throws -> HTTPResponse {
        let includeHistory = request.query["revs"] == "true"
        let content = try ContentRequest(request)
        if let openRevisions = request.query["open_revs"] {
            return try await readOpenRevisions(
                openRevisions, keyspace, id: id, includeHistory: includeHistory,
                latest: request.query["latest"] == "true",
                multipart: ListenerRouter.prefersMultipart(request), content: content)
        }
        if var rev = request.query["rev"] {
            if request.query["latest"] == "true" { rev = try keyspace.collection.latestLeaves(id: id, from: rev)[0] }
            return .json(try await fetch(id: id, rev: rev, keyspace, includeHistory: includeHistory, content: content))
        }
        let state = try keyspace.collection.storedState(id: id)
        guard state.document != nil, let rev = state.revisionID else {
            return .error(404, "not_found", state.revisionID == nil ? "missing" : "deleted")
        }
        return .json(try await fetch(id: id, rev: rev, keyspace, includeHistory: includeHistory, content: content))
    }

    private func fetch(id: String, rev: String, _ keyspace: Keyspace, includeHistory: Bool, content: ContentRequest) async throws -> Value {
        let fetched = try await keyspace.peer.bulkGet([RevisionRequest(id: id, revisionID: rev, knownAncestors: content.since)])
        guard case .found(var revision)? = fetched.first else {
            throw CouchetteError(.notFound, "missing")
        }
        if !content.inline { revision.attachments = [:] }
        if !includeHistory { revision.history = [rev] }
        return CouchDBDocument.json(revision, includeHistory: includeHistory)
    }

    /// `open_revs=all` or `open_revs=["1-a","2-b"]`: as JSON, `[{"ok": {doc}}, {"missing": "rev"}]`;
    /// as `multipart/mixed` (see ``prefersMultipart(_:)``), one `application/json` part per
    /// revision, the document or, typed `application/json; error="true"`, `{"missing": "rev"}`.
    private func readOpenRevisions(
        _ parameter: String, _ keyspace: Keyspace, id: String,
        includeHistory: Bool, latest: Bool, multipart: Bool, content: ContentRequest
    ) async throws -> HTTPResponse {
        var revisions: [String]
        if parameter == "all" {
            let tree = try keyspace.collection.revisionTree(id: id)
            revisions = tree.leafIndices.map { tree.nodes[$0].revisionID }
            if revisions.isEmpty { return .error(404, "not_found", "missing") }
        } else {
            guard case .array(let list) = try ListenerRouter.parseJSON(parameter, what: "open_revs") else {
                throw ListenerError.badRequest("open_revs must be \"all\" or a JSON array of revision ids")
            }
            revisions = try list.map {
                guard case .string(let rev) = $0 else { throw ListenerError.badRequest("open_revs must list revision ids as strings") }
                return rev
            }
            if latest { revisions = try revisions.flatMap { try keyspace.collection.latestLeaves(id: id, from: $0) } }
        }
        let fetched = try await keyspace.peer.bulkGet(
            revisions.map { RevisionRequest(id: id, revisionID: $0, knownAncestors: content.since) }
        ).map {
            // As CouchDB: a multipart answer carries content newer than `atts_since` even
            // without `attachments=true` (its replicator never asks for it).
            guard case .found(var revision) = $0, !content.inline, !multipart else { return $0 }
            revision.attachments = [:]
            return .found(revision)
        }
        if multipart {
            // Content travelling with a revision makes its part a multipart/related one, whose
            // attachment parts stream from the blob store as the client takes them.
            let boundary = MultipartDocumentWriter.makeBoundary()
            return HTTPResponse(
                status: 200, headers: [("Content-Type", MultipartDocumentWriter.contentType("mixed", boundary: boundary))],
                body: .stream { stream in
                    try? await MultipartDocumentWriter.writeMixed(fetched, includeHistory: includeHistory, boundary: boundary) { bytes in
                        guard await stream.send(bytes) else { throw CancellationError() }
                    }
                    stream.finish()
                })
        }
        let rows: [Value] = fetched.map {
            switch $0 {
            case .found(let revision): .dictionary(["ok": CouchDBDocument.json(revision, includeHistory: includeHistory)])
            case .failed(_, let rev, _): .dictionary(["missing": .string(rev)])
            }
        }
        return .json(.array(rows))
    }

    /// Whether an `open_revs` answer goes as `multipart/mixed`. The replication protocol says a
    /// source SHOULD answer `multipart/mixed` unless `Accept` asks for another type; CouchDB
    /// answers it whenever `Accept` lists `multipart/mixed`. So: JSON only when `Accept` names
    /// `application/json` and not `multipart/mixed`.
    static func prefersMultipart(_ request: HTTPRequest) -> Bool {
        acceptsMultipartMixed(request) || !acceptedTypes(request).contains("application/json")
    }

    /// Whether `Accept` names `multipart/mixed` (how `_bulk_get` is asked for multipart).
    static func acceptsMultipartMixed(_ request: HTTPRequest) -> Bool { acceptedTypes(request).contains("multipart/mixed") }

    private static func acceptedTypes(_ request: HTTPRequest) -> [String] {
        (request.header("accept") ?? "").lowercased().split(separator: ",").map {
            $0.split(separator: ";", maxSplits: 1).first.map { $0.trimmingCharacters(in: .whitespaces) } ?? ""
        }
    }

    // MARK: - Attachments

    static func isMultipart(_ request: HTTPRequest) -> Bool {
        request.header("content-type")?.lowercased().hasPrefix("multipart/") == true
    }

    /// `PUT /{db}/{doc}?new_edits=false` as `multipart/related`, how CouchDB's replicator sends a
    /// revision with attachments: the JSON part, then each `"follows": true` attachment, whose
    /// content goes straight into the blob store (decoded when gzip, checked against its length
    /// and digest) before the revision is grafted. A multipart write with `new_edits` true is
    /// refused like any attachment in a plain write.
    private func putMultipart(_ request: HTTPRequest, _ keyspace: Keyspace, id: String) async throws -> HTTPResponse {
        guard let type = request.header("content-type"), type.lowercased().hasPrefix("multipart/related") else {
            return .error(415, "unsupported_media_type", "document '\(id)': a multipart document must be multipart/related")
        }
        let reader = MultipartDocumentReader(store: keyspace.collection.reader.blobs, maximumJSONBytes: config.maximumRequestBodySize)
        defer { reader.releaseHeld() }
        let revision: PeerRevision
        do {
            var parts = try MultipartReader(contentType: type)
            if let stream = request.bodyStream {
                // Read as it arrives: attachment parts go to the blob store piece by piece.
                while let piece = try await stream.next() {
                    for event in try parts.feed(piece) { try reader.handle(event) }
                }
            } else {
                var offset = 0
                while offset < request.body.count {
                    let end = min(offset + BlobStore.chunkSize, request.body.count)
                    for event in try parts.feed(request.body[offset..<end]) { try reader.handle(event) }
                    offset = end
                }
            }
            try parts.finish()
            guard case .dictionary(var object)? = reader.documentJSON else {
                throw CouchetteError(.invalidParameter, "multipart document has no JSON part")
            }
            if let bodyID = object["_id"], bodyID != .string(id) {
                throw ListenerError.badRequest("the _id in the body does not match the document id '\(id)' in the URL")
            }
            guard request.query["new_edits"] == "false" else { throw ListenerRouter.attachmentsRefused(id: id) }
            object["_id"] = .string(id)
            if let rev = request.query["rev"], object["_rev"] == nil { object["_rev"] = .string(rev) }
            revision = try reader.revision(object: .dictionary(object))
        } catch let error as CouchetteError where error.code == .invalidParameter && !BlobWriter.isDigestMismatch(error) {
            throw ListenerError.badRequest(error.message)
        }
        if let failure = try await keyspace.peer.bulkDocs([revision]).first { throw failure.error }
        return .json(ListenerRouter.okResult(id: id, rev: revision.revisionID), status: 201)
    }

    /// Whether a document's JSON has a non-empty `_attachments` object.
    static func hasAttachments(_ json: Value) -> Bool {
        if case .dictionary(let attachments)? = json["_attachments"] { return !attachments.isEmpty }
        return false
    }

    /// Attachments in a plain write (`new_edits` true): Couchette takes attachments only with
    /// replicated revisions (`new_edits=false`); applications set blobs through the API.
    static func attachmentsRefused(id: String) -> ListenerError {
        .forbidden("document '\(id)' has attachments: Couchette stores them only with replicated revisions (new_edits=false)")
    }

    // MARK: - Helpers

    static func okResult(id: String, rev: String) -> Value {
        .dictionary(["ok": .bool(true), "id": .string(id), "rev": .string(rev)])
    }

    static func validateDocumentID(_ id: String) throws {
        if id.hasPrefix("_") && !id.hasPrefix("_design/") {
            throw ListenerError.badRequest("Only reserved document ids may start with underscore: '\(id)'")
        }
        do {
            try DocumentStore.validate(id: id)
        } catch let error as CouchetteError {
            throw ListenerError.badRequest(error.message)
        }
    }

    static func jsonBody(_ request: HTTPRequest) throws -> Value {
        guard !request.body.isEmpty else { throw ListenerError.badRequest("the request has no JSON body") }
        return try parseJSON(String(decoding: request.body, as: UTF8.self), what: "request body")
    }

    static func parseJSON(_ text: String, what: String) throws -> Value {
        do {
            return try JSON.parse(text)
        } catch let error as CouchetteError {
            throw ListenerError.badRequest("invalid JSON in \(what): \(error.message)")
        }
    }

    static func integer(_ text: String?, name: String) throws -> Int? {
        guard let text else { return nil }
        guard let number = Int(text), number >= 0 else {
            throw ListenerError.badRequest("\(name) must be a non-negative integer, got '\(text)'")
        }
        return number
    }
}
