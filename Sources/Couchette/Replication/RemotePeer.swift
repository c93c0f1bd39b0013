import Foundation

/// A ``ReplicationPeer`` over HTTP: one database (keyspace) of a CouchDB-protocol server —
/// another Couchette ``URLEndpointListener``, CouchDB, PouchDB Server — reached with its own
/// ``HTTPClient`` (libcurl: kept-alive connections closed with the peer, gzip, idle timeouts).
///
/// Sequences are opaque JSON: whatever the server sends as `seq`/`last_seq` is handed back
/// verbatim as `since`. Once caught up, a continuous replication reads one `feed=continuous`
/// stream with heartbeats (``ContinuousChangesFeed``); a server that cannot stream gets long
/// polls (`feed=longpoll`) instead. Failures: no connection, timeouts → `.io` (retryable);
/// 401/403 → `.unauthorized`; other HTTP errors → `.http(status:)` with CouchDB's reason.
/// Credentials travel only in headers and never appear in ``identifier`` or error messages. A
/// session cookie the server renews (`Set-Cookie` with the same name, as CouchDB does past
/// 90% of a session's life) replaces the one sent.
final class RemotePeer: ReplicationPeer {
    /// One server of the database: its URL without credentials, and the Basic credentials the
    /// given URL carried.
    struct Server: Sendable {
        let base: String
        let authorization: String?
    }

    /// Stable id of the remote database for replication ids: the database URL, or with several
    /// servers, their URLs sorted and joined — whichever is in use.
    let identifier: String
    /// The database on each server (one for a plain ``URLEndpoint``).
    let servers: [Server]
    /// Which of ``servers`` requests go to; shared by the peers of one replicator.
    let selection: ServerSelection
    /// Sent with every request; `Cookie` is updated when the server renews a session cookie.
    private let headers: Locked<[String: String]>
    let client: HTTPClient
    /// Silence after which a request is given up (long polls: their wait plus this); 4/5 of it
    /// bounds connecting, when shorter than ``HTTPClientRequest/connectTimeout``.
    private let requestTimeout: Duration
    /// Silence after which a streamed request is given up.
    var readTimeout: Duration { requestTimeout }
    /// The open `feed=continuous` `_changes` stream of a continuous replication, if any, and
    /// the server it reads from.
    let feed = Locked<(feed: ContinuousChangesFeed, server: Int)?>(nil)
    /// Whether continuous waits read a `feed=continuous` stream; false once the server showed
    /// it cannot stream `_changes`: long polls from then on.
    let streamsChanges = Locked(true)
    /// False once the server answered a `_bulk_get` that asked for `multipart/mixed` with
    /// something else: large content is then fetched per document from `open_revs`.
    let answersBulkGetAsMultipart = Locked(true)
    /// True after a request found no server to connect to, until one is answered again.
    let isUnreachable = Locked(false)
    /// How often ``awaitRetry(within:)`` probes an unreachable server.
    static let probeInterval = Duration.seconds(1)
    /// `_rev`s of `_local` documents as last read or written. CouchDB 3.x checks none (it stores
    /// `0-(N+1)` for the `0-N` sent), but servers that follow its API reference (PouchDB) refuse
    /// an update without the current one.
    private let localRevisions = Locked<[String: String]>([:])

    /// - Parameters:
    ///   - url: `http(s)://host:port/db`; `user:password@` in it becomes HTTP Basic credentials.
    ///   - headers: extra headers for every request (`Authorization`, `Cookie`, custom ones).
    ///   - requestTimeout: seconds without a byte after which a request fails with `.io`.
    ///   - tls: server trust and client certificate for `https://` (nil: the system trust store).
    /// - Throws: `.invalidParameter` when `url` is not an http(s) URL naming a database.
    convenience init(url: URL, headers: [String: String] = [:], requestTimeout: TimeInterval = 60, tls: HTTPClientTLS? = nil) throws {
        try self.init(urls: [url], selection: ServerSelection(urls: [url]), headers: headers, requestTimeout: requestTimeout, tls: tls)
    }

    /// A peer of one database served by several servers (``URLEndpoint/init(urls:)``): `urls[i]`
    /// is the database on server `i` of `selection`.
    init(
        urls: [URL], selection: ServerSelection, headers: [String: String] = [:], requestTimeout: TimeInterval = 60,
        tls: HTTPClientTLS? = nil
    ) throws {
        guard !urls.isEmpty, urls.count == selection.urls.count else {
            throw CouchetteError(.invalidParameter, "a remote peer needs one database URL per server")
        }
        client = HTTPClient(tls: tls)
        servers = try urls.map(Self.server)
        identifier = servers.count == 1 ? servers[0].base : servers.map(\.base).sorted().joined(separator: " ")
        self.selection = selection
        self.headers = Locked(headers)
        self.requestTimeout = .milliseconds(Int64(min(max(requestTimeout, 0.001), 1e9) * 1000))
    }

    /// `url` as a ``Server``: the database URL without credentials, query or trailing slash.
    private static func server(_ url: URL) throws -> Server {
        guard var components = URLComponents(url: url, resolvingAgainstBaseURL: false),
            let scheme = components.scheme?.lowercased(), scheme == "http" || scheme == "https",
            components.host?.isEmpty == false
        else {
            throw CouchetteError(.invalidParameter, "'\(RemotePeer.redacted(url))' is not an http(s) URL of a database")
        }
        var authorization: String?
        if let user = components.user {
            let credentials = "\(user.removingPercentEncoding ?? user):\((components.password ?? "").removingPercentEncoding ?? "")"
            authorization = "Basic " + Data(credentials.utf8).base64EncodedString()
        }
        components.user = nil
        components.password = nil
        components.query = nil
        components.fragment = nil
        var path = components.percentEncodedPath
        while path.hasSuffix("/") { path.removeLast() }
        guard !path.isEmpty else {
            throw CouchetteError(.invalidParameter, "'\(RemotePeer.redacted(url))' names no database (expected http://host:port/db)")
        }
        components.percentEncodedPath = path
        guard let clean = components.string else {
            throw CouchetteError(.invalidParameter, "'\(RemotePeer.redacted(url))' is not a valid URL")
        }
        return Server(base: clean, authorization: authorization)
    }

    /// The database URL on the server in use.
    var base: String { servers[selection.current].base }

    deinit {
        feed.withLock { $0?.feed.close() }
    }

    /// `url` without user and password, for messages.
    static func redacted(_ url: URL) -> String {
        guard var components = URLComponents(url: url, resolvingAgainstBaseURL: false) else { return "(unparsable URL)" }
        components.user = nil
        components.password = nil
        return components.string ?? "(unparsable URL)"
    }

    // MARK: - ReplicationPeer

    func info() async throws -> PeerInfo {
        let json = try await send("GET", "")
        guard let sequence = json["update_seq"] else {
            throw CouchetteError(.http(status: 502), "\(base) answered GET without update_seq: not a CouchDB database")
        }
        let name: String = if case .string(let given)? = json["db_name"] { given } else { base }
        return PeerInfo(name: name, updateSequence: sequence)
    }

    func changes(since: Value?, limit: Int, documentIDs: [String]?, selector: MangoSelector?, wait: ChangesWait) async throws -> PeerChanges
    {
        if case .longpoll(let timeout) = wait, documentIDs == nil, selector == nil,
            let streamed = try await continuousChanges(since: since, limit: limit, timeout: timeout)
        {
            return streamed
        }
        var query = [("style", "all_docs")]
        if let since { query.append(("since", RemotePeer.queryText(since))) }
        if limit < Int.max { query.append(("limit", String(limit))) }
        var timeout = requestTimeout
        if case .longpoll(let wait) = wait {
            // CouchDB may send the head and `{"results":[` at once, then nothing until the wait ends.
            query += [("feed", "longpoll"), ("timeout", String(CurlTransfer.milliseconds(wait)))]
            timeout = wait + .seconds(30)
        }
        let json: Value
        if let selector {
            // CouchDB filters with one filter only: document ids join the selector as an `_id` condition.
            var condition = selector.source
            if let documentIDs {
                condition = .dictionary([
                    "$and": .array([condition, .dictionary(["_id": .dictionary(["$in": .array(documentIDs.map(Value.string))])])])
                ])
            }
            query.append(("filter", "_selector"))
            json = try await send("POST", "/_changes", query: query, body: .dictionary(["selector": condition]), timeout: timeout)
        } else if let documentIDs {
            query.append(("filter", "_doc_ids"))
            json = try await send(
                "POST", "/_changes", query: query,
                body: .dictionary(["doc_ids": .array(documentIDs.map(Value.string))]), timeout: timeout)
        } else {
            json = try await send("GET", "/_changes", query: query, timeout: timeout)
        }
        guard case .array(let rows)? = json["results"], let lastSequence = json["last_seq"] else {
            throw CouchetteError(.http(status: 502), "\(base) answered _changes without results/last_seq")
        }
        return PeerChanges(results: try rows.map { try PeerChange(couchDBRow: $0, from: base) }, lastSequence: lastSequence)
    }

    func revsDiff(_ revisions: [String: [String]]) async throws -> [String: RevsDiffResult] {
        let json = try await send("POST", "/_revs_diff", body: .dictionary(revisions.mapValues { .array($0.map(Value.string)) }))
        guard case .dictionary(let entries) = json else {
            throw CouchetteError(.http(status: 502), "\(base) answered _revs_diff with something other than an object")
        }
        return entries.mapValues { entry in
            RevsDiffResult(
                missing: RemotePeer.strings(entry["missing"]), possibleAncestors: RemotePeer.strings(entry["possible_ancestors"]))
        }
    }

    /// `_bulk_get` for the revisions with stubs only; then the content each lacks (newer than
    /// its `atts_since`): inline base64 from a second `_bulk_get` when small, per document from
    /// `open_revs` as multipart when large (see ``inlineContentLimit``), so a large attachment
    /// is never held in memory as base64 JSON.
    func bulkGet(_ requests: [RevisionRequest]) async throws -> [RevisionFetch] {
        guard var fetched = try await bulkGetJSON(requests, withContent: false) else {
            return try await fetchOneByOne(requests)  // servers before CouchDB 2.3 have no _bulk_get
        }
        var small: [(index: Int, request: RevisionRequest)] = []
        var large: [(index: Int, request: RevisionRequest)] = []
        for (index, fetch) in fetched.enumerated() {
            guard case .found(let revision) = fetch, let asked = requests.first(where: { $0.id == revision.id }) else { continue }
            let known = asked.knownAncestors.compactMap(RevisionID.generation(of:)).max() ?? 0
            guard let lacking = RemotePeer.lackingContent(revision, known: known) else { continue }
            let request = RevisionRequest(id: revision.id, revisionID: revision.revisionID, knownAncestors: asked.knownAncestors)
            if lacking <= RemotePeer.inlineContentLimit { small.append((index, request)) } else { large.append((index, request)) }
        }
        if !small.isEmpty, let withContent = try await bulkGetJSON(small.map(\.request), withContent: true) {
            // Matched by id and revision, not position: a server may answer in its own order.
            for entry in small {
                if let again = withContent.first(where: { Self.answers($0, entry.request) }) { fetched[entry.index] = again }
            }
        }
        if !large.isEmpty {
            // One multipart `_bulk_get` for all of them (CouchDB 3.x), else one `open_revs` each.
            let together = try await bulkGetMultipart(large.map(\.request))
            for entry in large {
                if let found = together?.first(where: { Self.answers($0, entry.request) }) {
                    fetched[entry.index] = found
                } else {
                    fetched[entry.index] = try await fetchAsMultipart(entry.request).first ?? notReturned(entry.request)
                }
            }
        }
        return fetched
    }

    /// One `_bulk_get`: with `withContent`, content newer than each request's `atts_since`
    /// comes inline (base64), else stubs only. Nil when the server has no `_bulk_get`.
    private func bulkGetJSON(_ requests: [RevisionRequest], withContent: Bool) async throws -> [RevisionFetch]? {
        let docs: [Value] = requests.map { request in
            var entry: [String: Value] = ["id": .string(request.id), "rev": .string(request.revisionID)]
            if withContent, !request.knownAncestors.isEmpty { entry["atts_since"] = .array(request.knownAncestors.map(Value.string)) }
            return .dictionary(entry)
        }
        var query = [("revs", "true")]
        if withContent { query.append(("attachments", "true")) }
        if requests.contains(where: \.latest) { query.append(("latest", "true")) }
        let json: Value
        do {
            json = try await send("POST", "/_bulk_get", query: query, body: .dictionary(["docs": .array(docs)]))
        } catch let error as CouchetteError where [.http(status: 404), .http(status: 405), .http(status: 400)].contains(error.code) {
            return nil
        }
        guard case .array(let results)? = json["results"] else {
            throw CouchetteError(.http(status: 502), "\(base) answered _bulk_get without results")
        }
        // One result per requested document, in request order; a `latest` one may hold several leaves.
        var fetched: [RevisionFetch] = []
        for (request, result) in zip(requests, results) {
            guard case .array(let entries)? = result["docs"], !entries.isEmpty else {
                fetched.append(notReturned(request))
                continue
            }
            for entry in entries {
                if let doc = entry["ok"] {
                    fetched.append(RemotePeer.revision(doc, requested: request))
                } else {
                    let failure = entry["error"] ?? .dictionary([:])
                    let rev: String = if case .string(let given)? = failure["rev"] { given } else { request.revisionID }
                    fetched.append(.failed(id: request.id, revisionID: rev, error: RemotePeer.documentError(failure, id: request.id)))
                }
            }
        }
        fetched += requests.dropFirst(results.count).map(notReturned)
        return fetched
    }

    /// Whether `fetch` is the answer to `request` (same document and revision).
    static func answers(_ fetch: RevisionFetch, _ request: RevisionRequest) -> Bool {
        switch fetch {
        case .found(let revision): revision.id == request.id && revision.revisionID == request.revisionID
        case .failed(let id, let rev, _): id == request.id && rev == request.revisionID
        }
    }

    /// A requested revision the server's `_bulk_get` answer left out.
    private func notReturned(_ request: RevisionRequest) -> RevisionFetch {
        .failed(
            id: request.id, revisionID: request.revisionID,
            error: CouchetteError(.notFound, "\(base) did not return revision \(request.revisionID) of '\(request.id)'"))
    }

    /// One fetched document; one that cannot be taken (attachments, malformed) is a failed fetch
    /// of its own, not a failure of the whole batch.
    static func revision(_ doc: Value, requested: RevisionRequest) -> RevisionFetch {
        do {
            return .found(try CouchDBDocument.revision(from: doc))
        } catch {
            let rev: String = if case .string(let given)? = doc["_rev"] { given } else { requested.revisionID }
            return .failed(
                id: requested.id, revisionID: rev,
                error: error as? CouchetteError ?? CouchetteError(.invalidParameter, "document '\(requested.id)': \(error)"))
        }
    }

    /// Without `_bulk_get`: each revision from `open_revs`, as multipart (content streamed).
    private func fetchOneByOne(_ requests: [RevisionRequest]) async throws -> [RevisionFetch] {
        var fetched: [RevisionFetch] = []
        for request in requests { fetched += try await fetchAsMultipart(request) }
        return fetched
    }

    /// `_bulk_docs` with `new_edits: false`. A request the server refuses as too large (413) is
    /// sent again in halves, as CouchDB's replicator does; a single document still too large
    /// fails on its own.
    /// Revisions carrying more than ``inlineContentLimit`` bytes of content go one by one as
    /// `multipart/related` PUTs (content streamed from the blob store); so does a single
    /// revision with content that `_bulk_docs` refuses as too large.
    func bulkDocs(_ revisions: [PeerRevision]) async throws -> [DocumentWriteError] {
        let large = revisions.filter { RemotePeer.travellingContent($0) > RemotePeer.inlineContentLimit }
        var errors: [DocumentWriteError] = []
        for revision in large {
            if let error = try await putAsMultipart(revision) { errors.append(error) }
        }
        let inline = large.isEmpty ? revisions : revisions.filter { RemotePeer.travellingContent($0) <= RemotePeer.inlineContentLimit }
        guard !inline.isEmpty else { return errors }
        return try await errors + bulkDocsJSON(inline)
    }

    private func bulkDocsJSON(_ revisions: [PeerRevision]) async throws -> [DocumentWriteError] {
        let docs = revisions.map { CouchDBDocument.json($0, includeHistory: true) }
        let json: Value
        do {
            json = try await send("POST", "/_bulk_docs", body: .dictionary(["docs": .array(docs), "new_edits": .bool(false)]))
        } catch let error as CouchetteError where error.code == .http(status: 413) {
            guard revisions.count > 1 else {
                if let revision = revisions.first, !revision.attachments.isEmpty {
                    return try await putAsMultipart(revision).map { [$0] } ?? []
                }
                return revisions.map { DocumentWriteError(id: $0.id, revisionID: $0.revisionID, error: error) }
            }
            let half = revisions.count / 2
            return try await bulkDocsJSON(Array(revisions[..<half])) + bulkDocsJSON(Array(revisions[half...]))
        }
        guard case .array(let rows) = json else {
            throw CouchetteError(.http(status: 502), "\(base) answered _bulk_docs with something other than an array")
        }
        return rows.compactMap { row in
            guard row["error"] != nil, case .string(let id)? = row["id"] else { return nil }
            let rev: String? = if case .string(let given)? = row["rev"] { given } else { nil }
            return DocumentWriteError(id: id, revisionID: rev, error: RemotePeer.documentError(row, id: id))
        }
    }

    func localDocument(id: String) async throws -> Value? {
        let json: Value
        do {
            json = try await send("GET", "/_local/" + RemotePeer.encodeDocumentID(id))
        } catch let error as CouchetteError where error.code == .http(status: 404) {
            _ = localRevisions.withLock { $0.removeValue(forKey: id) }
            return nil
        }
        guard case .dictionary(var object) = json else { return nil }
        if case .string(let rev)? = object.removeValue(forKey: "_rev") { localRevisions.withLock { $0[id] = rev } }
        // Meta fields (`_id`, `_revisions` from a server that keeps them) are not checkpoint data.
        for key in object.keys where key.hasPrefix("_") { object.removeValue(forKey: key) }
        return .dictionary(object)
    }

    func putLocalDocument(id: String, _ body: Value) async throws {
        for attempt in 0..<3 {
            guard case .dictionary(var object) = body else {
                throw CouchetteError(.invalidParameter, "a _local document must be a JSON object")
            }
            if let rev = localRevisions.withLock({ $0[id] }) { object["_rev"] = .string(rev) }
            do {
                let json = try await send("PUT", "/_local/" + RemotePeer.encodeDocumentID(id), body: .dictionary(object))
                if case .string(let rev)? = json["rev"] { localRevisions.withLock { $0[id] = rev } }
                return
            } catch let error as CouchetteError where error.code == .http(status: 409) {
                // A stale `_rev` (learn the current one, then retry), or this very write applied
                // already: when an answer is lost on a reused connection, libcurl resends the
                // request on a new one, and the copy finds the revision the first one made.
                if try await localDocument(id: id) == body { return }
                if attempt == 2 { throw error }
            }
        }
    }

    func ensureFullCommit() async throws {
        do {
            _ = try await send("POST", "/_ensure_full_commit", body: .dictionary([:]))
        } catch let error as CouchetteError where [.http(status: 404), .http(status: 405)].contains(error.code) {
            // Servers that dropped the endpoint commit every write anyway.
        }
    }

    /// Waits before a failed replication is retried: the whole `wait` (the backoff), except
    /// while the server was unreachable — then `GET /` probes it (each server of the list, in
    /// order) every ``probeInterval`` and the wait ends as soon as one answers anything, so a
    /// replicator notices a server that came back within about a second or two instead of
    /// waiting out a backoff of up to minutes. Failures after connecting (errors, broken answers) keep the full backoff.
    func awaitRetry(within wait: Duration) async throws {
        let deadline = ContinuousClock.now + wait
        guard isUnreachable.withLock({ $0 }) else {
            try await Task.sleep(until: deadline)
            return
        }
        let probes = servers.map { server in
            var probe = HTTPClientRequest(method: "GET", url: Self.serverRoot(server.base), headers: [("Accept", "application/json")])
            probe.connectTimeout = Self.probeInterval
            probe.idleTimeout = Self.probeInterval * 2
            return probe
        }
        while ContinuousClock.now < deadline {
            try await Task.sleep(until: min(deadline, .now + Self.probeInterval))
            // Every server in order of preference: the first that answers is used from now on.
            for (index, probe) in probes.enumerated() {
                do {
                    _ = try await client.data(for: probe, maxBodyBytes: 64 * 1024)
                    selection.answered(index)
                    return  // any answer: the server is back
                } catch is CancellationError {
                    throw CancellationError()
                } catch {
                    continue  // still away
                }
            }
        }
    }

    /// `http(s)://host:port/` of a database URL.
    private static func serverRoot(_ base: String) -> String {
        guard var components = URLComponents(string: base) else { return base }
        components.percentEncodedPath = "/"
        return components.string ?? base
    }

    // MARK: - HTTP

    /// The headers every request to `server` carries, in a stable order: the configured ones,
    /// and the credentials of the server's URL unless an `Authorization` header is configured.
    func requestHeaders(on server: Int) -> [(name: String, value: String)] {
        var all = headers.withLock { $0 }
        if all["Authorization"] == nil, let authorization = servers[server].authorization { all["Authorization"] = authorization }
        return all.sorted { $0.key < $1.key }.map { (name: $0.key, value: $0.value) }
    }

    /// The database URL on `server` + `path` + the encoded query; with `atRoot`, the server's
    /// root URL + `path` (`/_session`).
    func url(_ path: String, query: [(String, String)] = [], on server: Int, atRoot: Bool = false) -> String {
        let base = atRoot ? String(Self.serverRoot(servers[server].base).dropLast()) : servers[server].base
        guard !query.isEmpty else { return base + path }
        return base + path + "?" + query.map { "\($0.0)=\(RemotePeer.encodeQueryValue($0.1))" }.joined(separator: "&")
    }

    /// Sends one request and parses the JSON answer.
    /// - Parameter timeout: silence after which the request fails (default ``requestTimeout``).
    private func send(
        _ method: String, _ path: String, query: [(String, String)] = [], body: Value? = nil,
        timeout: Duration? = nil
    ) async throws -> Value {
        try await exchange(method, path, query: query, body: body, timeout: timeout).json
    }

    /// Sends one request and returns the JSON answer with the response it came in. A server that
    /// cannot be reached hands the request to the next server of ``selection`` (nothing was
    /// sent, so any request may go again); `.io` when none can be reached.
    /// - Parameters:
    ///   - timeout: silence after which the request fails (default ``requestTimeout``).
    ///   - atRoot: `path` is on the server (`/_session`), not in the database.
    func exchange(
        _ method: String, _ path: String, query: [(String, String)] = [], body: Value? = nil,
        timeout: Duration? = nil, atRoot: Bool = false
    ) async throws -> (json: Value, response: HTTPClientResponse) {
        let shownPath = path.isEmpty ? "/" : path
        var unreachable: [String] = []
        let response: HTTPClientResponse
        var base: String
        while true {
            let server = selection.current
            base = atRoot ? String(Self.serverRoot(servers[server].base).dropLast()) : servers[server].base
            var request = HTTPClientRequest(
                method: method, url: url(path, query: query, on: server, atRoot: atRoot),
                headers: [("Accept", "application/json")] + requestHeaders(on: server))
            request.idleTimeout = timeout ?? requestTimeout
            // Connecting ends before the idle limit can: a server that never completes the
            // connection is reported unreachable (and failed over), not as a silent one.
            request.connectTimeout = min(request.connectTimeout, requestTimeout * 0.8)
            if let body {
                request.headers.append(("Content-Type", "application/json"))
                request.body = Data(JSON.string(from: body).utf8)
            }
            do {
                response = try await client.data(for: request)
                selection.answered(server)
                break
            } catch let error as HTTPConnectError {
                unreachable.append(servers.count == 1 ? error.message : "\(base): \(error.message)")
                guard unreachable.count < servers.count else {
                    isUnreachable.withLock { $0 = true }
                    let whom = servers.count == 1 ? base : "any of the \(servers.count) servers of the database"
                    throw CouchetteError(.io, "cannot reach \(whom) (\(method) \(shownPath)): \(unreachable.joined(separator: "; "))")
                }
                selection.failOver(from: server)
            } catch let error as CouchetteError where error.code == .io {
                throw CouchetteError(.io, "lost \(base) (\(method) \(shownPath)): \(error.message)")
            }
        }
        isUnreachable.withLock { $0 = false }
        renewCookie(from: response)
        let status = response.status
        let data = response.body
        let json = data.isEmpty ? Value.null : ((try? JSON.parse(String(decoding: data, as: UTF8.self))) ?? .null)
        guard (200..<300).contains(status) else {
            let reason = [json["error"], json["reason"]].compactMap { if case .string(let text)? = $0 { text } else { nil } }
                .joined(separator: ": ")
            let message = "\(method) \(base)\(path) failed with HTTP \(status)" + (reason.isEmpty ? "" : " (\(reason))")
            throw CouchetteError(status == 401 || status == 403 ? .unauthorized : .http(status: status), message)
        }
        if data.isEmpty || json == .null, !data.isEmpty {
            throw CouchetteError(.http(status: 502), "\(method) \(base)\(path) answered with invalid JSON")
        }
        return (json, response)
    }

    /// Takes a renewed session cookie: a `Set-Cookie` naming a cookie the `Cookie` header sends.
    private func renewCookie(from response: HTTPClientResponse) {
        let cookies = response.cookies
        guard !cookies.isEmpty else { return }
        headers.withLock { headers in
            guard let sent = headers["Cookie"] else { return }
            var pairs = sent.split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces) }
            for cookie in cookies {
                guard let pair = cookie.split(separator: ";").first?.trimmingCharacters(in: .whitespaces),
                    let equals = pair.firstIndex(of: "="), !pair[..<equals].isEmpty
                else { continue }
                let name = pair[...equals]
                if let index = pairs.firstIndex(where: { $0.hasPrefix(name) }), !pair[pair.index(after: equals)...].isEmpty {
                    pairs[index] = pair
                }
            }
            headers["Cookie"] = pairs.joined(separator: "; ")
        }
    }

    /// A sequence as `since=`: strings (CouchDB's opaque sequences) as they are, others as JSON.
    static func queryText(_ sequence: Value) -> String {
        if case .string(let text) = sequence { return text }
        return JSON.string(from: sequence)
    }

    private static let unreserved = CharacterSet(charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")

    static func encodeQueryValue(_ text: String) -> String {
        text.addingPercentEncoding(withAllowedCharacters: unreserved) ?? text
    }

    /// Document ids in paths: `/` is escaped (`%2F`) except after `_design`, as CouchDB expects.
    static func encodeDocumentID(_ id: String) -> String {
        if id.hasPrefix("_design/") { return "_design/" + encodeQueryValue(String(id.dropFirst(8))) }
        return encodeQueryValue(id)
    }

    private static func strings(_ value: Value?) -> [String] {
        guard case .array(let items)? = value else { return [] }
        return items.compactMap { if case .string(let text) = $0 { text } else { nil } }
    }

    /// A per-document `{"error": "conflict", "reason": …}` as a ``CouchetteError``.
    static func documentError(_ failure: Value, id: String) -> CouchetteError {
        let name: String = if case .string(let given)? = failure["error"] { given } else { "unknown_error" }
        let reason: String = if case .string(let given)? = failure["reason"] { given } else { name }
        let code: CouchetteError.Code =
            switch name {
            case "not_found": .notFound
            case "conflict": .conflict
            case "forbidden", "unauthorized": .unauthorized
            case "bad_request", "doc_validation": .invalidParameter
            default: .http(status: 500)
            }
        return CouchetteError(code, "document '\(id)': \(name): \(reason)")
    }
}
