import Foundation

/// Attachment content over HTTP without holding it in memory, as CouchDB's replicator moves it:
/// large content is pulled per document from `open_revs` as `multipart/mixed` (each revision a
/// nested `multipart/related`, its parts streamed into ``StagedFile``s) and pushed with
/// `PUT /{db}/{doc}?new_edits=false` as `multipart/related`, streamed from the blob store.
/// Small content keeps travelling inline (base64) in `_bulk_get` and `_bulk_docs`.
extension RemotePeer {
    /// Content a revision carries inline (base64 in JSON) up to this many bytes in all; more
    /// goes as multipart. Base64 JSON is held whole in memory on both sides, multipart is not.
    static let inlineContentLimit: UInt64 = 64 * 1024

    /// The bytes of content `revision` references and does not carry, that a receiver which has
    /// the revisions up to generation `known` lacks (CouchDB's rule: `revpos` newer than
    /// `atts_since`); nil when nothing is lacking. Unknown lengths count as large.
    static func lackingContent(_ revision: PeerRevision, known: Int) -> UInt64? {
        guard !revision.deleted, BlobSearch.mayHoldReference(revision.body), let bytes = try? ValueEncoder.encode(revision.body) else {
            return nil
        }
        let generation = Int64(RevisionID.generation(of: revision.revisionID) ?? 1)
        let lacking = BlobSearch.references(in: EncodedValue(bytes: bytes)).filter {
            ($0.revisionPosition ?? generation) > Int64(known) && revision.attachments[$0.digest] == nil
        }
        guard !lacking.isEmpty else { return nil }
        return lacking.reduce(0) { $0 &+ ($1.length ?? UInt64.max / 2) }
    }

    /// The bytes of content travelling with `revision` (what a push sends of it).
    static func travellingContent(_ revision: PeerRevision) -> UInt64 {
        revision.attachments.values.reduce(0) { $0 &+ ($1.length ?? 0) }
    }

    // MARK: - Pulling

    /// One revision and the content newer than `request.knownAncestors`, from
    /// `GET /{db}/{doc}?open_revs=["rev"]&revs=true&attachments=true&atts_since=[…]` with
    /// `Accept: multipart/mixed`. A server answering JSON instead is read as JSON.
    func fetchAsMultipart(_ request: RevisionRequest) async throws -> [RevisionFetch] {
        var query = [("revs", "true"), ("attachments", "true"), ("open_revs", JSON.string(from: .array([.string(request.revisionID)])))]
        if request.latest { query.append(("latest", "true")) }
        if !request.knownAncestors.isEmpty {
            query.append(("atts_since", JSON.string(from: .array(request.knownAncestors.map(Value.string)))))
        }
        let path = "/" + RemotePeer.encodeDocumentID(request.id)
        let stream = try await openStream("GET", path, query: query, accept: "multipart/mixed, application/json")
        let type = stream.headers["content-type"] ?? ""
        guard (200..<300).contains(stream.status) else {
            let text = try await Self.collect(stream, limit: 1 << 16)
            if stream.status == 404 {
                return [
                    .failed(id: request.id, revisionID: request.revisionID, error: CouchetteError(.notFound, "\(base)\(path): \(text)"))
                ]
            }
            throw CouchetteError(
                stream.status == 401 || stream.status == 403 ? .unauthorized : .http(status: stream.status),
                "GET \(base)\(path) failed with HTTP \(stream.status) (\(text.prefix(200)))")
        }
        if !type.lowercased().hasPrefix("multipart/") {
            // JSON: [{"ok": doc} | {"missing": rev}], content inline.
            let text = try await Self.collect(stream, limit: 1 << 30)
            guard case .array(let rows) = try JSON.parse(text) else {
                throw CouchetteError(.http(status: 502), "\(base) answered open_revs of '\(request.id)' with something other than an array")
            }
            return rows.map { row in
                if let doc = row["ok"] { return RemotePeer.revision(doc, requested: request) }
                let rev: String = if case .string(let missing)? = row["missing"] { missing } else { request.revisionID }
                return .failed(
                    id: request.id, revisionID: rev, error: CouchetteError(.notFound, "\(base) has no revision \(rev) of '\(request.id)'"))
            }
        }
        return try await readMixed(stream, contentType: type, requests: [request])
    }

    /// `POST /{db}/_bulk_get?revs=true&attachments=true` with `Accept: multipart/mixed`: the
    /// requested revisions and the content newer than each one's `atts_since`, in one response
    /// whose attachment parts stream into staged files (as ``fetchAsMultipart(_:)`` reads
    /// `open_revs`, with one request for many documents). Nil when the server cannot answer so
    /// (no `_bulk_get`, or an answer that is not multipart: its body is not read, and the
    /// server is not asked again).
    func bulkGetMultipart(_ requests: [RevisionRequest]) async throws -> [RevisionFetch]? {
        guard answersBulkGetAsMultipart.withLock({ $0 }) else { return nil }
        let docs: [Value] = requests.map { request in
            var entry: [String: Value] = ["id": .string(request.id), "rev": .string(request.revisionID)]
            if !request.knownAncestors.isEmpty { entry["atts_since"] = .array(request.knownAncestors.map(Value.string)) }
            return .dictionary(entry)
        }
        var query = [("revs", "true"), ("attachments", "true")]
        if requests.contains(where: \.latest) { query.append(("latest", "true")) }
        let stream = try await openStream(
            "POST", "/_bulk_get", query: query, accept: "multipart/mixed", body: .dictionary(["docs": .array(docs)]))
        let type = stream.headers["content-type"] ?? ""
        guard (200..<300).contains(stream.status), type.lowercased().hasPrefix("multipart/mixed") else {
            // An older server answers JSON with the content inline as base64: not read.
            stream.cancel()
            answersBulkGetAsMultipart.withLock { $0 = false }
            return nil
        }
        return try await readMixed(stream, contentType: type, requests: requests)
    }

    /// A request to the server in use whose answer is read as it arrives (at most 1 MiB held).
    /// - Throws: `.io` naming the server when it cannot be reached.
    private func openStream(_ method: String, _ path: String, query: [(String, String)], accept: String, body: Value? = nil)
        async throws -> HTTPClientStream
    {
        let server = selection.current
        var request = HTTPClientRequest(
            method: method, url: url(path, query: query, on: server), headers: [("Accept", accept)] + requestHeaders(on: server))
        if let body {
            request.headers.append(("Content-Type", "application/json"))
            request.body = Data(JSON.string(from: body).utf8)
        }
        request.idleTimeout = readTimeout
        do {
            return try await client.stream(for: request, bufferLimit: 1 << 20)
        } catch let error as HTTPConnectError {
            throw CouchetteError(.io, "cannot reach \(base) (\(method) \(path)): \(error.message)")
        }
    }

    /// Reads a `multipart/mixed` answer of `open_revs` or `_bulk_get`: `application/json` parts
    /// (a revision without content, or `error="true"`: `{"missing": rev}` from `open_revs`,
    /// `{"id", "rev", "error", "reason"}` from `_bulk_get`) and `multipart/related` parts.
    private func readMixed(_ stream: HTTPClientStream, contentType: String, requests: [RevisionRequest]) async throws
        -> [RevisionFetch]
    {
        guard let first = requests.first else { return [] }
        func requested(_ id: String?) -> RevisionRequest { requests.first { $0.id == id } ?? first }
        var outer = try MultipartReader(contentType: contentType)
        var fetched: [RevisionFetch] = []
        var json: [UInt8]?
        var jsonIsError = false
        var inner: (parts: MultipartReader, document: MultipartDocumentReader)?
        let staging = FileManager.default.temporaryDirectory.path
        func take(_ events: [MultipartReader.Event]) throws {
            for event in events {
                switch event {
                case .part(let headers):
                    let type = (headers["content-type"] ?? "application/json").lowercased()
                    if type.hasPrefix("multipart/related") {
                        inner = (
                            try MultipartReader(contentType: headers["content-type"] ?? ""),
                            MultipartDocumentReader(.staging(directory: staging))
                        )
                    } else {
                        json = []
                        jsonIsError = type.contains("error=\"true\"") || type.contains("error=true")
                    }
                case .data(let bytes):
                    if var part = inner {
                        for innerEvent in try part.parts.feed(bytes) { try part.document.handle(innerEvent) }
                        inner = part
                    } else if json != nil {
                        json!.append(contentsOf: bytes)
                        guard json!.count <= 64 << 20 else {
                            throw CouchetteError(
                                .invalidParameter, "\(base): a JSON part of a multipart answer for '\(first.id)' is larger than 64 MiB")
                        }
                    }
                case .partEnd:
                    if let part = inner {
                        try part.parts.finish()
                        fetched.append(.found(try part.document.revision()))
                        inner = nil
                    } else if let bytes = json {
                        let value = try JSON.parse(String(decoding: bytes, as: UTF8.self))
                        let id: String? = if case .string(let given)? = value["_id"] ?? value["id"] { given } else { nil }
                        let request = requested(id)
                        if jsonIsError || value["missing"] != nil {
                            var rev = request.revisionID
                            if case .string(let named)? = value["missing"] ?? value["rev"] { rev = named }
                            let error =
                                value["error"] == nil || value["error"] == .string("not_found")
                                ? CouchetteError(.notFound, "\(base) has no revision \(rev) of '\(request.id)'")
                                : RemotePeer.documentError(value, id: request.id)
                            fetched.append(.failed(id: request.id, revisionID: rev, error: error))
                        } else {
                            fetched.append(RemotePeer.revision(value, requested: request))
                        }
                        json = nil
                    }
                case .end:
                    break
                }
            }
        }
        for try await chunk in stream { try take(try outer.feed(chunk)) }
        try outer.finish()
        return fetched
    }

    /// A short body read whole (an error answer or JSON), at most `limit` bytes.
    private static func collect(_ stream: HTTPClientStream, limit: Int) async throws -> String {
        var body = Data()
        for try await chunk in stream {
            body.append(chunk)
            guard body.count <= limit else { throw CouchetteError(.io, "an answer was longer than \(limit) bytes") }
        }
        return String(decoding: body, as: UTF8.self)
    }

    // MARK: - Pushing

    /// `PUT /{db}/{doc}?new_edits=false` as `multipart/related`: the JSON part, then each
    /// travelling attachment streamed from its file as libcurl sends.
    func putAsMultipart(_ revision: PeerRevision) async throws -> DocumentWriteError? {
        let (json, following) = CouchDBDocument.multipartJSON(revision, includeHistory: true)
        let boundary = MultipartDocumentWriter.makeBoundary()
        let body = try MultipartUpload(json: json, following: following, boundary: boundary)
        let path = "/" + RemotePeer.encodeDocumentID(revision.id)
        let server = selection.current
        var request = HTTPClientRequest(
            method: "PUT", url: url(path, query: [("new_edits", "false")], on: server),
            headers: [("Accept", "application/json"), ("Content-Type", MultipartDocumentWriter.contentType("related", boundary: boundary))]
                + requestHeaders(on: server))
        request.upload = body
        request.idleTimeout = readTimeout
        let response: HTTPClientResponse
        do {
            response = try await client.data(for: request, maxBodyBytes: 1 << 20)
        } catch let error as HTTPConnectError {
            throw CouchetteError(.io, "cannot reach \(base) (PUT \(path)): \(error.message)")
        }
        guard (200..<300).contains(response.status) else {
            let json = (try? JSON.parse(String(decoding: response.body, as: UTF8.self))) ?? .dictionary([:])
            let error = RemotePeer.documentError(json, id: revision.id)
            // Per-document refusals are the document's; a server error fails the batch.
            if response.status >= 500 { throw error }
            return DocumentWriteError(id: revision.id, revisionID: revision.revisionID, error: error)
        }
        return nil
    }
}
