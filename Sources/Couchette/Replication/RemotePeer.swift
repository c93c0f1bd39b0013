import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A ``ReplicationPeer`` over HTTP: one database (keyspace) of a CouchDB-protocol server —
/// another Couchette ``URLEndpointListener``, CouchDB, PouchDB Server — reached with
/// `URLSession` (keep-alive, gzip accepted by libcurl; every request raced by a watchdog, see
/// ``answer(_:within:)``).
///
/// Sequences are opaque JSON: whatever the server sends as `seq`/`last_seq` is handed back
/// verbatim as `since`. Once caught up, a continuous replication long-polls (`feed=longpoll`);
/// with ``ReplicatorConfiguration/streamsChanges`` (internal, off: FoundationNetworking spins a
/// core while a stream is open) it reads one `feed=continuous` stream with heartbeats instead
/// (``ContinuousChangesFeed``, a data delegate: Linux has no `URLSession.bytes`). Failures: no connection, timeouts → `.io` (retryable); 401/403 →
/// `.unauthorized`; other HTTP errors → `.http(status:)` with CouchDB's reason. Credentials
/// travel only in headers and never appear in ``identifier`` or error messages.
final class RemotePeer: ReplicationPeer {
    let identifier: String
    let base: String
    let headers: [String: String]
    /// Replaced when a request got stuck (see ``answer(_:within:)``).
    private let session: Locked<URLSession>
    /// Sessions replaced after a stuck request, kept until ``deinit`` invalidates them.
    private let retiredSessions = Locked<[URLSession]>([])
    /// Seconds a request may take (long polls: their wait plus this).
    private let requestTimeout: TimeInterval
    /// The open `feed=continuous` `_changes` stream of a continuous replication, if any.
    let feed = Locked<ContinuousChangesFeed?>(nil)
    /// Whether continuous waits read a `feed=continuous` stream (see
    /// ``ReplicatorConfiguration/streamsChanges``); false once the server showed it cannot
    /// stream `_changes`: long polls from then on.
    let streamsChanges: Locked<Bool>
    /// `_rev`s of `_local` documents as last read or written. CouchDB 3.x checks none (it stores
    /// `0-(N+1)` for the `0-N` sent), but servers that follow its API reference (PouchDB) refuse
    /// an update without the current one.
    private let localRevisions = Locked<[String: String]>([:])

    /// - Parameters:
    ///   - url: `http(s)://host:port/db`; `user:password@` in it becomes HTTP Basic credentials.
    ///   - headers: extra headers for every request (`Authorization`, `Cookie`, custom ones).
    ///   - streamsChanges: continuous waits read one `feed=continuous` stream instead of long polls.
    /// - Throws: `.invalidParameter` when `url` is not an http(s) URL naming a database.
    init(url: URL, headers: [String: String] = [:], streamsChanges: Bool = false, requestTimeout: TimeInterval = 60) throws {
        self.streamsChanges = Locked(streamsChanges)
        guard var components = URLComponents(url: url, resolvingAgainstBaseURL: false),
              let scheme = components.scheme?.lowercased(), scheme == "http" || scheme == "https",
              components.host?.isEmpty == false else {
            throw CouchetteError(.invalidParameter, "'\(RemotePeer.redacted(url))' is not an http(s) URL of a database")
        }
        var headers = headers
        if let user = components.user {
            let credentials = "\(user.removingPercentEncoding ?? user):\((components.password ?? "").removingPercentEncoding ?? "")"
            headers["Authorization"] = headers["Authorization"] ?? "Basic " + Data(credentials.utf8).base64EncodedString()
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
        base = clean
        identifier = clean
        self.headers = headers
        self.requestTimeout = requestTimeout
        session = Locked(RemotePeer.makeSession())
    }

    /// Keep-alive connections (up to 8), no cookies, no cache; challenges refused (credentials
    /// travel in headers).
    private static func makeSession() -> URLSession {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.httpMaximumConnectionsPerHost = 8
        configuration.timeoutIntervalForRequest = 60
        configuration.httpCookieAcceptPolicy = .never
        configuration.httpShouldSetCookies = false
        configuration.urlCache = nil
        return URLSession(configuration: configuration, delegate: RefusingChallenges(), delegateQueue: nil)
    }

    deinit {
        session.withLock { $0.finishTasksAndInvalidate() }
        retiredSessions.withLock { $0.forEach { $0.finishTasksAndInvalidate() } }
        feed.withLock { $0?.close() }
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
            throw CouchetteError(.http(status: 502), "\(identifier) answered GET without update_seq: not a CouchDB database")
        }
        let name: String = if case .string(let given)? = json["db_name"] { given } else { identifier }
        return PeerInfo(name: name, updateSequence: sequence)
    }

    func changes(since: Value?, limit: Int, documentIDs: [String]?, selector: MangoSelector?, wait: ChangesWait) async throws -> PeerChanges {
        if case .longpoll(let timeout) = wait, documentIDs == nil, selector == nil,
           let streamed = try await continuousChanges(since: since, limit: limit, timeout: timeout) {
            return streamed
        }
        var query = [("style", "all_docs")]
        if let since { query.append(("since", RemotePeer.queryText(since))) }
        if limit < Int.max { query.append(("limit", String(limit))) }
        var timeout = requestTimeout
        if case .longpoll(let wait) = wait {
            let milliseconds = wait.components.seconds * 1000 + wait.components.attoseconds / 1_000_000_000_000_000
            query += [("feed", "longpoll"), ("timeout", String(milliseconds))]
            timeout = Double(milliseconds) / 1000 + 30
        }
        let json: Value
        if let selector {
            // CouchDB filters with one filter only: document ids join the selector as an `_id` condition.
            var condition = selector.source
            if let documentIDs {
                condition = .dictionary(["$and": .array([condition, .dictionary(["_id": .dictionary(["$in": .array(documentIDs.map(Value.string))])])])])
            }
            query.append(("filter", "_selector"))
            json = try await send("POST", "/_changes", query: query, body: .dictionary(["selector": condition]), timeout: timeout)
        } else if let documentIDs {
            query.append(("filter", "_doc_ids"))
            json = try await send("POST", "/_changes", query: query,
                                  body: .dictionary(["doc_ids": .array(documentIDs.map(Value.string))]), timeout: timeout)
        } else {
            json = try await send("GET", "/_changes", query: query, timeout: timeout)
        }
        guard case .array(let rows)? = json["results"], let lastSequence = json["last_seq"] else {
            throw CouchetteError(.http(status: 502), "\(identifier) answered _changes without results/last_seq")
        }
        return PeerChanges(results: try rows.map { try PeerChange(couchDBRow: $0, from: identifier) }, lastSequence: lastSequence)
    }

    func revsDiff(_ revisions: [String: [String]]) async throws -> [String: RevsDiffResult] {
        let json = try await send("POST", "/_revs_diff", body: .dictionary(revisions.mapValues { .array($0.map(Value.string)) }))
        guard case .dictionary(let entries) = json else {
            throw CouchetteError(.http(status: 502), "\(identifier) answered _revs_diff with something other than an object")
        }
        return entries.mapValues { entry in
            RevsDiffResult(missing: RemotePeer.strings(entry["missing"]), possibleAncestors: RemotePeer.strings(entry["possible_ancestors"]))
        }
    }

    func bulkGet(_ requests: [RevisionRequest]) async throws -> [RevisionFetch] {
        let docs: [Value] = requests.map { request in
            var entry: [String: Value] = ["id": .string(request.id), "rev": .string(request.revisionID)]
            if !request.knownAncestors.isEmpty { entry["atts_since"] = .array(request.knownAncestors.map(Value.string)) }
            return .dictionary(entry)
        }
        var query = [("revs", "true"), ("attachments", "false")]
        if requests.contains(where: \.latest) { query.append(("latest", "true")) }
        let json: Value
        do {
            json = try await send("POST", "/_bulk_get", query: query, body: .dictionary(["docs": .array(docs)]))
        } catch let error as CouchetteError where [.http(status: 404), .http(status: 405), .http(status: 400)].contains(error.code) {
            return try await fetchOneByOne(requests)   // servers before CouchDB 2.3 have no _bulk_get
        }
        guard case .array(let results)? = json["results"] else {
            throw CouchetteError(.http(status: 502), "\(identifier) answered _bulk_get without results")
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

    /// A requested revision the server's `_bulk_get` answer left out.
    private func notReturned(_ request: RevisionRequest) -> RevisionFetch {
        .failed(id: request.id, revisionID: request.revisionID,
                error: CouchetteError(.notFound, "\(identifier) did not return revision \(request.revisionID) of '\(request.id)'"))
    }

    /// One fetched document; one that cannot be taken (attachments, malformed) is a failed fetch
    /// of its own, not a failure of the whole batch.
    private static func revision(_ doc: Value, requested: RevisionRequest) -> RevisionFetch {
        do {
            return .found(try CouchDBDocument.revision(from: doc))
        } catch {
            let rev: String = if case .string(let given)? = doc["_rev"] { given } else { requested.revisionID }
            return .failed(id: requested.id, revisionID: rev,
                           error: error as? CouchetteError ?? CouchetteError(.invalidParameter, "document '\(requested.id)': \(error)"))
        }
    }

    private func fetchOneByOne(_ requests: [RevisionRequest]) async throws -> [RevisionFetch] {
        var fetched: [RevisionFetch] = []
        for request in requests {
            var query = [("rev", request.revisionID), ("revs", "true")]
            if request.latest { query.append(("latest", "true")) }
            do {
                let json = try await send("GET", "/" + RemotePeer.encodeDocumentID(request.id), query: query)
                fetched.append(RemotePeer.revision(json, requested: request))
            } catch let error as CouchetteError where error.code == .http(status: 404) {
                fetched.append(.failed(id: request.id, revisionID: request.revisionID, error: CouchetteError(.notFound, error.message)))
            }
        }
        return fetched
    }

    /// `_bulk_docs` with `new_edits: false`. A request the server refuses as too large (413) is
    /// sent again in halves, as CouchDB's replicator does; a single document still too large
    /// fails on its own.
    func bulkDocs(_ revisions: [PeerRevision]) async throws -> [DocumentWriteError] {
        let docs = revisions.map { CouchDBDocument.json($0, includeHistory: true) }
        let json: Value
        do {
            json = try await send("POST", "/_bulk_docs", body: .dictionary(["docs": .array(docs), "new_edits": .bool(false)]))
        } catch let error as CouchetteError where error.code == .http(status: 413) {
            guard revisions.count > 1 else {
                return revisions.map { DocumentWriteError(id: $0.id, revisionID: $0.revisionID, error: error) }
            }
            let half = revisions.count / 2
            return try await bulkDocs(Array(revisions[..<half])) + bulkDocs(Array(revisions[half...]))
        }
        guard case .array(let rows) = json else {
            throw CouchetteError(.http(status: 502), "\(identifier) answered _bulk_docs with something other than an array")
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
        for attempt in 0..<2 {
            guard case .dictionary(var object) = body else {
                throw CouchetteError(.invalidParameter, "a _local document must be a JSON object")
            }
            if let rev = localRevisions.withLock({ $0[id] }) { object["_rev"] = .string(rev) }
            do {
                let json = try await send("PUT", "/_local/" + RemotePeer.encodeDocumentID(id), body: .dictionary(object))
                if case .string(let rev)? = json["rev"] { localRevisions.withLock { $0[id] = rev } }
                return
            } catch let error as CouchetteError where error.code == .http(status: 409) && attempt == 0 {
                _ = try await localDocument(id: id)   // learn the current _rev, then retry once
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

    // MARK: - HTTP

    /// The answer to `request`, or `.io` when none came within `timeout` plus a margin.
    ///
    /// Kept-alive connections stay (an idle replicator must not churn connections: with
    /// `Connection: close` FoundationNetworking was measured spinning a core after the closes),
    /// but FoundationNetworking (Swift 6.3.1) sometimes never completes a request whose reused
    /// connection the server closed at that moment — its own timeout never fires either
    /// (HTTPFaultTests found it). So the request races a watchdog; when the watchdog wins, the
    /// stuck request is abandoned (never cancelled: see
    /// ``Foundation/URLSession/dataAbandonedOnCancel(for:)``) and later requests use a fresh
    /// session, so stuck transfers cannot pile up in the old one's connection slots.
    private func answer(_ request: URLRequest, within timeout: TimeInterval) async throws -> (Data, URLResponse) {
        let current = session.withLock { $0 }
        let limit = Duration.milliseconds(Int64(timeout * 1000 + min(timeout, 2) * 1000))
        let first = try await withThrowingTaskGroup(of: (Data, URLResponse)?.self) { group in
            group.addTask { try await current.dataAbandonedOnCancel(for: request) }
            group.addTask {
                try await Task.sleep(for: limit)
                return nil
            }
            defer { group.cancelAll() }
            return try await group.next() ?? nil
        }
        if let first { return first }
        try Task.checkCancellation()
        session.withLock { session in
            guard session === current else { return }
            session = RemotePeer.makeSession()
            // Not invalidated now: a request that already took `current` would hit
            // FoundationNetworking's fatal "Session invalidated". Invalidated with the peer.
            retiredSessions.withLock { $0.append(current) }
        }
        throw CouchetteError(.io, "\(request.httpMethod ?? "GET") \(identifier) got no answer within \(limit); retrying on new connections")
    }

    /// Sends one request and parses the JSON answer.
    private func send(_ method: String, _ path: String, query: [(String, String)] = [], body: Value? = nil,
                      timeout: TimeInterval? = nil) async throws -> Value {
        let timeout = timeout ?? requestTimeout
        var text = base + path
        if !query.isEmpty {
            text += "?" + query.map { "\($0.0)=\(RemotePeer.encodeQueryValue($0.1))" }.joined(separator: "&")
        }
        guard let url = URL(string: text) else {
            throw CouchetteError(.invalidParameter, "cannot build a URL for \(identifier)\(path)")
        }
        var request = URLRequest(url: url, timeoutInterval: timeout)
        request.httpMethod = method
        request.setValue("application/json", forHTTPHeaderField: "Accept")
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        if let body {
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
            // libcurl would otherwise send `Expect: 100-continue` and wait for the server's go-ahead.
            request.setValue("", forHTTPHeaderField: "Expect")
            request.httpBody = Data(JSON.string(from: body).utf8)
        }
        let data: Data
        let response: URLResponse
        do {
            (data, response) = try await answer(request, within: timeout)
        } catch let error as CouchetteError {
            throw error
        } catch is CancellationError {
            throw CancellationError()
        } catch let error as URLError where error.code == .cancelled || error.code == .userCancelledAuthentication {
            // Not this task's cancellation: RefusingChallenges cancelled an authentication challenge.
            try Task.checkCancellation()
            throw CouchetteError(.unauthorized, "\(method) \(identifier)\(path) was refused: the server asks for other credentials")
        } catch {
            throw CouchetteError(.io, "cannot reach \(identifier): \((error as NSError).localizedDescription)")
        }
        let status = (response as? HTTPURLResponse)?.statusCode ?? 0
        let json = data.isEmpty ? Value.null : ((try? JSON.parse(String(decoding: data, as: UTF8.self))) ?? .null)
        guard (200..<300).contains(status) else {
            let reason = [json["error"], json["reason"]].compactMap { if case .string(let text)? = $0 { text } else { nil } }
                .joined(separator: ": ")
            let message = "\(method) \(identifier)\(path) failed with HTTP \(status)" + (reason.isEmpty ? "" : " (\(reason))")
            throw CouchetteError(status == 401 || status == 403 ? .unauthorized : .http(status: status), message)
        }
        if data.isEmpty || json == .null, !data.isEmpty {
            throw CouchetteError(.http(status: 502), "\(method) \(identifier)\(path) answered with invalid JSON")
        }
        return json
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
    private static func documentError(_ failure: Value, id: String) -> CouchetteError {
        let name: String = if case .string(let given)? = failure["error"] { given } else { "unknown_error" }
        let reason: String = if case .string(let given)? = failure["reason"] { given } else { name }
        let code: CouchetteError.Code = switch name {
        case "not_found": .notFound
        case "conflict": .conflict
        case "forbidden", "unauthorized": .unauthorized
        case "bad_request", "doc_validation": .invalidParameter
        default: .http(status: 500)
        }
        return CouchetteError(code, "document '\(id)': \(name): \(reason)")
    }
}

/// Answers HTTP authentication challenges by cancelling them: credentials go in headers up front,
/// and without a delegate Foundation on Linux waits forever on a `401` carrying `WWW-Authenticate`.
private final class RefusingChallenges: NSObject, URLSessionTaskDelegate {
    func urlSession(_ session: URLSession, task: URLSessionTask, didReceive challenge: URLAuthenticationChallenge,
                    completionHandler: @escaping @Sendable (URLSession.AuthChallengeDisposition, URLCredential?) -> Void) {
        completionHandler(.cancelAuthenticationChallenge, nil)
    }
}
