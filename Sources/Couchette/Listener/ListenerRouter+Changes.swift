/// `GET|POST /{db}/_changes` in its three feeds: `normal` (what is there), `longpoll` (wait for
/// the first change or the timeout) and `continuous` (one JSON line per change, newline
/// heartbeats, until the timeout or the client leaves). Waiting happens on the collection's
/// commit observers inside ``LocalPeer``, never by polling. Filters: `_doc_ids` (ids in the
/// query or the body) and `_selector` (a Mango selector in the POST body, see ``MangoSelector``);
/// `include_docs=true` adds each document's current revision.
extension ListenerRouter {
    struct ChangesOptions: Sendable {
        var since: Value?
        var limit: Int
        var documentIDs: [String]?
        var selector: MangoSelector?
        var includeDocs: Bool
        var allLeaves: Bool
        var heartbeat: Duration?
        var timeout: Duration?
    }

    func changes(_ request: HTTPRequest, _ keyspace: Keyspace) async throws -> HTTPResponse {
        let options = try await changesOptions(request, keyspace)
        switch request.query["feed"] ?? "normal" {
        case "normal":
            let page = try await keyspace.peer.changes(
                since: options.since, limit: options.limit, documentIDs: options.documentIDs,
                selector: options.selector, wait: .normal)
            return .json(try changesBody(page, keyspace, options))
        case "longpoll":
            let wait = ChangesWait.longpoll(timeout: options.timeout ?? Self.longestChangesWait)
            let page = try await keyspace.peer.changes(
                since: options.since, limit: options.limit, documentIDs: options.documentIDs,
                selector: options.selector, wait: wait)
            return .json(try changesBody(page, keyspace, options))
        case "continuous", "eventsource":
            return HTTPResponse(
                status: 200, headers: [("Content-Type", "application/json")],
                body: .stream { [self] stream in
                    await continuousFeed(stream, keyspace, options)
                })
        case let other:
            throw ListenerError.badRequest("unsupported feed '\(other)' (normal, longpoll or continuous)")
        }
    }

    /// The longest a `_changes` request waits with nothing to send: CouchDB's `changes_timeout`
    /// (60 s), which caps the `timeout` a client asks for, as CouchDB does; a longer `heartbeat`
    /// is shortened to it too. A long poll or a feed without heartbeats writes nothing while it
    /// waits, so a client that left is noticed only when it ends: without the cap, a client asking
    /// for years held a civetweb worker thread that long (the listener has a few dozen).
    static let longestChangesWait = Duration.seconds(60)

    /// A client's `timeout` or `heartbeat`, in milliseconds, as the wait the listener grants.
    static func changesWait(milliseconds: Int) -> Duration {
        min(.milliseconds(max(milliseconds, 0)), longestChangesWait)
    }

    private func changesOptions(_ request: HTTPRequest, _ keyspace: Keyspace) async throws -> ChangesOptions {
        let query = request.query
        var documentIDs: [String]?
        var selector: MangoSelector?
        switch query["filter"] {
        case nil, "_doc_ids"?:
            break
        case "_selector"?:
            // CouchDB's answer to a missing or malformed selector: 400 "Selector error: …".
            let body = request.method == "POST" && !request.body.isEmpty ? try ListenerRouter.jsonBody(request) : .null
            do {
                selector = try MangoSelector(body["selector"] ?? .null)
            } catch let error as CouchetteError {
                throw ListenerError.badRequest(error.message)
            }
        case let filter?:
            throw ListenerError.badRequest("unsupported filter '\(filter)' (_doc_ids or _selector)")
        }
        var idsValue: Value?
        if selector == nil, let raw = query["doc_ids"] { idsValue = try ListenerRouter.parseJSON(raw, what: "doc_ids") }
        if selector == nil, request.method == "POST", !request.body.isEmpty {
            idsValue = try ListenerRouter.jsonBody(request)["doc_ids"] ?? idsValue
        }
        if let idsValue {
            guard case .array(let list) = idsValue else { throw ListenerError.badRequest("doc_ids must be a JSON array of strings") }
            documentIDs = try list.map {
                guard case .string(let id) = $0 else { throw ListenerError.badRequest("doc_ids must be a JSON array of strings") }
                return id
            }
        } else if query["filter"] == "_doc_ids" {
            throw ListenerError.badRequest("filter=_doc_ids needs doc_ids")
        }
        var since: Value?
        switch query["since"] {
        case nil, "0"?: since = nil
        case "now"?: since = try await keyspace.peer.info().updateSequence
        case let raw?: since = (try? JSON.parse(raw)) ?? .string(raw)  // CouchDB sequences are opaque strings
        }
        let limit = try ListenerRouter.integer(query["limit"], name: "limit").map { max($0, 1) } ?? Int.max
        var heartbeat: Duration?
        if let raw = query["heartbeat"] {
            heartbeat =
                raw == "true"
                ? Self.longestChangesWait
                : try ListenerRouter.integer(raw, name: "heartbeat").map { Self.changesWait(milliseconds: max($0, 100)) }
        }
        let timeout = try ListenerRouter.integer(query["timeout"], name: "timeout").map { Self.changesWait(milliseconds: $0) }
        let style = query["style"] ?? "main_only"
        guard style == "main_only" || style == "all_docs" else {
            throw ListenerError.badRequest("unsupported style '\(style)' (main_only or all_docs)")
        }
        return ChangesOptions(
            since: since, limit: limit, documentIDs: documentIDs, selector: selector,
            includeDocs: query["include_docs"] == "true", allLeaves: style == "all_docs",
            heartbeat: heartbeat, timeout: timeout)
    }

    private func changesBody(_ page: PeerChanges, _ keyspace: Keyspace, _ options: ChangesOptions) throws -> Value {
        .dictionary([
            "results": .array(try page.results.map { try row($0, keyspace, options) }),
            "last_seq": page.lastSequence, "pending": .int(0),
        ])
    }

    /// `{"seq", "id", "changes": [{"rev"}], "deleted"}`; `main_only` lists just the current revision.
    private func row(_ change: PeerChange, _ keyspace: Keyspace, _ options: ChangesOptions) throws -> Value {
        var revisions = change.leafRevisions
        if !options.allLeaves, revisions.count > 1, let current = try keyspace.collection.storedState(id: change.id).revisionID {
            revisions = [current]
        }
        var row: [String: Value] = [
            "seq": change.sequence, "id": .string(change.id),
            "changes": .array(revisions.map { .dictionary(["rev": .string($0)]) }),
        ]
        if change.deleted { row["deleted"] = .bool(true) }
        if options.includeDocs { row["doc"] = try currentDocument(change.id, keyspace) }
        return .dictionary(row)
    }

    /// The current revision as `include_docs` shows it; a deletion as `{"_id", "_rev", "_deleted": true}`.
    private func currentDocument(_ id: String, _ keyspace: Keyspace) throws -> Value {
        let state = try keyspace.collection.storedState(id: id)
        guard let rev = state.revisionID else { return .null }
        guard let document = state.document else { return MangoSelector.document(id: id, revisionID: rev, deleted: true, body: nil) }
        return CouchDBDocument.json(
            PeerRevision(id: id, revisionID: rev, deleted: false, body: document.root.decode(), history: [rev]),
            includeHistory: false)
    }

    /// Writes changes as they happen until the timeout passes without one (default 60 s without
    /// a heartbeat; none with one; as CouchDB, each change starts it again: transcript `b07`),
    /// the limit, cancellation (listener stopping) or the client leaving.
    private func continuousFeed(_ stream: ResponseStream, _ keyspace: Keyspace, _ options: ChangesOptions) async {
        let clock = ContinuousClock()
        let idle = options.timeout ?? (options.heartbeat == nil ? Self.longestChangesWait : nil)
        var deadline = idle.map { clock.now + $0 }
        var since = options.since
        var remaining = options.limit
        do {
            while remaining > 0 {
                var wait = options.heartbeat ?? Self.longestChangesWait
                if let deadline {
                    let left = deadline - clock.now
                    if left <= .zero { break }
                    wait = min(wait, left)
                }
                let page = try await keyspace.peer.changes(
                    since: since, limit: remaining, documentIDs: options.documentIDs,
                    selector: options.selector, wait: .longpoll(timeout: wait))
                try Task.checkCancellation()
                var text = ""
                for change in page.results {
                    JSON.write(try row(change, keyspace, options), to: &text)
                    text += "\n"
                }
                if page.results.isEmpty && options.heartbeat != nil { text = "\n" }
                if !text.isEmpty, !stream.write(text) { return }
                if !page.results.isEmpty, let idle { deadline = clock.now + idle }
                remaining -= page.results.count
                since = page.lastSequence
            }
            var last = ""
            JSON.write(.dictionary(["last_seq": since ?? .int(0), "pending": .int(0)]), to: &last)
            stream.write(last + "\n")
        } catch {
            // Cancellation (the listener is stopping) or a closed database: end the feed.
        }
    }
}
