import Foundation
import Testing

@testable import Couchette

/// The listener answering, in order, every request Apache CouchDB 3.5's own replicator sent in
/// transcripts `b01`–`b04` (four runs in a row, pushing from "src" into "dst" — so Couchette is
/// the source and the target), `b06` (`doc_ids`) and `b07` (a continuous run), compared with
/// what CouchDB answered.
///
/// Couchette's "src" holds what CouchDB's did: the revisions those runs fetched (with their
/// `_revisions`), written before each run; revisions that came with attachments (the nested
/// `multipart/related` parts of `open_revs` answers) are PUT into "src" as those bodies; the replicator's multipart PUTs
/// into "dst" (attachments gzip-encoded among them) are stored. Opaque sequences are mapped: the `since` of a
/// request becomes Couchette's sequence for the `last_seq` CouchDB had answered. The listener
/// requires a login, so the replicator's form login to `/_session` and the cookie it then sends
/// are replayed too; the continuous feed stays open while the other requests go on, as it did.
@Suite(.serialized, .tags(.concurrency, .sanitizeAddress)) struct CouchDBReplicatorReplayTests {
    /// Runs one and two, the listener restarted (a new port, new sessions; the same databases),
    /// then runs three and four: CouchDB's replicator failed from its third run before.
    @Test func fourRunsInARowAnswerAsCouchDBDid() async throws {
        let directory = try TemporaryDirectory()
        let src = try directory.open("src"), dst = try directory.open("dst")
        let served = [try src.defaultCollection(), try dst.defaultCollection()]
        let replay = ReplicatorReplay()
        for files in [["b01-replicate-initial", "b02-replicate-resume-1"], ["b03-replicate-resume-2", "b04-replicate-nothing-to-do"]] {
            try await withListener(served, configure: ReplicatorReplay.requireLogin) { _, base in
                await replay.serve(from: base)
                for file in files {
                    let exchanges = try Transcript.load(file)
                    try await replay.seed(exchanges)
                    try await replay.run(exchanges, file: file)
                }
                if files.last == "b04-replicate-nothing-to-do" {
                    // The checkpoints of the fourth run are the third run's, at 0-3 on both sides.
                    let checkpoint = try await httpRequest(
                        "GET", base + "/dst/_local/72d529f1c11bc58e73840007c0914f2b",
                        headers: ReplicatorReplay.basicAuthorization)
                    #expect(checkpoint.json?["_rev"] == .string("0-3") && checkpoint.json?["_revisions"] == nil)
                }
            }
        }
        // d07's second revision came with its attachment inline (CouchDB sends content newer than
        // atts_since even with attachments=false), so "src" holds it, attachment and all.
        let refused = await replay.refused
        #expect(refused.isEmpty)
        #expect(try await src.defaultCollection().document(id: "d07")?.dictionary(forKey: "_attachments")?.blob(forKey: "added.txt") != nil)
        let multipartPuts = await replay.multipartPuts
        #expect(multipartPuts == ["att1", "att2", "d07"])
        // Every revision "src" holds reached "dst", d07's second one in a multipart PUT.
        let sourceRevisions = try currentRevisions(try src.defaultCollection())
        let targetRevisions = try currentRevisions(try dst.defaultCollection())
        #expect(sourceRevisions.count == 29)
        for (id, rev) in sourceRevisions { #expect(targetRevisions[id] == rev, "\(id)") }
        // The attachments of the multipart PUTs are stored, gzip-encoded parts decoded.
        let target = try dst.defaultCollection()
        let added = try #require(try await target.document(id: "d07")?.dictionary(forKey: "_attachments")?.blob(forKey: "added.txt"))
        #expect(try await added.content() == Data("attachment added in the second run\n".utf8))
        let data = try #require(try await target.document(id: "att2")?.dictionary(forKey: "_attachments")?.blob(forKey: "data.json"))
        #expect(try await data.content() == Data(#"{"hello":"world"}"#.utf8))
        try await src.close()
        try await dst.close()
    }

    /// `doc_ids` (a deleted one and a missing one among them): `POST _changes?filter=_doc_ids`.
    @Test func aRunWithDocumentIDsAnswersAsCouchDBDid() async throws {
        let exchanges = try Transcript.load("b06-replicate-doc-ids")
        try await withReplay(target: "dst_ids") { replay, target in
            try await replay.seed(exchanges)
            try await replay.run(exchanges, file: "b06-replicate-doc-ids")
            let refused = await replay.refused
            #expect(refused.isEmpty)
            #expect(try currentRevisions(target).keys.sorted() == ["att2", "d01", "d03", "d04"])
        }
    }

    @Test func aContinuousRunAnswersAsCouchDBDid() async throws {
        let exchanges = try Transcript.load("b07-replicate-continuous")
        // The source edit a client made 10 s in (d09, exchange 42) comes while the feed is open.
        let editAt = exchanges.first { $0.actor == "client" && $0.method == "PUT" }?.seq ?? 0
        #expect(editAt == 42)
        let before = exchanges.filter { $0.seq < editAt }, edit = exchanges.filter { $0.seq > editAt }
        try await withReplay(target: "dst_cont") { replay, target in
            try await replay.seed(before)
            await replay.whileTheFeedIsOpen(seeding: edit)
            try await replay.run(exchanges, file: "b07-replicate-continuous")
            let feeds = await replay.continuousFeeds
            #expect(feeds == 2)
            #expect(try await target.document(id: "d09")?.int(forKey: "n") == 900)
        }
    }

    /// Fresh "src" and `target` databases served by a listener that wants a login, and a replay
    /// aimed at it.
    private func withReplay(target name: String, _ body: (ReplicatorReplay, Collection) async throws -> Void) async throws {
        let directory = try TemporaryDirectory()
        let src = try directory.open("src"), dst = try directory.open(name)
        let target = try dst.defaultCollection()
        try await withListener([try src.defaultCollection(), target], configure: ReplicatorReplay.requireLogin) { _, base in
            let replay = ReplicatorReplay()
            await replay.serve(from: base)
            try await body(replay, target)
        }
        try await src.close()
        try await dst.close()
    }
}

/// Replays the replicator's requests of transcripts against the listener at `base`.
private actor ReplicatorReplay {
    /// The listener's URL.
    private(set) var base = ""
    /// Ids of documents "src" refused (attachments without their content).
    var refused: Set<String> = []
    /// Ids of documents "dst" took in multipart PUTs.
    var multipartPuts: Set<String> = []
    /// CouchDB's `last_seq` answers → Couchette's for the same point.
    var sequences: [String: String] = ["0": "0"]
    var duringContinuousFeed: [TranscriptExchange] = []
    var continuousFeeds = 0

    /// The `AuthSession` cookie of the replicator's last login.
    var cookie: String?
    /// The continuous feed still open, with what to check once it ends.
    var openFeed: (task: Task<HTTPReply, any Error>, exchange: TranscriptExchange, context: String)?

    func serve(from base: String) { self.base = base }

    /// CouchDB's transcripts log in as `admin` with the password `<redacted>`.
    static let requireLogin: @Sendable (inout URLEndpointListenerConfiguration) -> Void = {
        $0.authenticator = ListenerPasswordAuthenticator { $0 == "admin" && $1 == "<redacted>" }
    }
    static let basicAuthorization = ["Authorization": "Basic " + Data("admin:<redacted>".utf8).base64EncodedString()]

    /// What to write into "src" once the first continuous feed is open (a source edit).
    func whileTheFeedIsOpen(seeding exchanges: [TranscriptExchange]) { duringContinuousFeed = exchanges }

    /// Writes into "src" every revision the replicator fetched from it in `exchanges`.
    func seed(_ exchanges: [TranscriptExchange]) async throws {
        var docs: [Value] = []
        for exchange in exchanges where exchange.actor == "couchdb-replicator" && exchange.route.hasPrefix("/src/") {
            if exchange.route == "/src/_bulk_get", case .array(let results)? = exchange.responseJSON?["results"] {
                for result in results {
                    guard case .array(let entries)? = result["docs"] else { continue }
                    docs += entries.compactMap { $0["ok"] }
                }
            } else if exchange.query.contains("open_revs"), let related = try Self.relatedPart(exchange) {
                // A revision with its attachments: PUT into "src" as the replicator PUTs it.
                let id = exchange.route.split(separator: "/").dropFirst().joined(separator: "/")
                var request = HTTPClientRequest(
                    method: "PUT", url: base + "/src/" + RemotePeer.encodeDocumentID(id) + "?new_edits=false",
                    headers: [("Content-Type", related.contentType)] + Self.basicAuthorization.map { ($0.key, $0.value) },
                    body: related.body)
                request.idleTimeout = .seconds(30)
                let reply = try await HTTPClient.shared.data(for: request)
                #expect(reply.status == 201, "seeding src with \(id): \(String(decoding: reply.body, as: UTF8.self))")
            } else if exchange.query.contains("open_revs"), let doc = Self.documentPart(exchange.responseBody) {
                docs.append(doc)
            }
        }
        guard !docs.isEmpty else { return }
        let body = JSON.string(from: .dictionary(["docs": .array(docs), "new_edits": .bool(false)]))
        let reply = try await httpRequest("POST", base + "/src/_bulk_docs", body: body, headers: Self.basicAuthorization)
        #expect(reply.status == 201, "seeding src: \(reply.text)")
        guard case .array(let failures)? = reply.json else { return }
        for failure in failures {
            // Attachments come as stubs (_bulk_get) or follow in multipart bodies (open_revs),
            // neither with content: such documents are refused one by one.
            #expect(failure["error"] == .string("missing_stub"), "seeding src: \(failure)")
            if case .string(let id)? = failure["id"] { refused.insert(id) }
        }
    }

    func run(_ exchanges: [TranscriptExchange], file: String) async throws {
        for exchange in exchanges {
            let context = "\(file) #\(exchange.seq) \(exchange.method) \(exchange.path.prefix(90))"
            guard exchange.actor == "couchdb-replicator" else {
                // A client's source edit while the continuous feed is open.
                if exchange.method == "PUT", !duringContinuousFeed.isEmpty {
                    try await seed(duringContinuousFeed)
                    duringContinuousFeed = []
                }
                continue
            }
            let parts = exchange.route.split(separator: "/").map(String.init)
            let endpoint = parts.count > 1 ? parts[1] : ""
            if endpoint == "_changes" { try await finishOpenFeed() }
            switch (exchange.method, endpoint) {
            case ("POST", "") where parts == ["_session"]:
                let reply = try await replay(exchange, to: base, body: Array("name=admin&password=%3Credacted%3E".utf8))
                #expect(reply.status == exchange.status, "\(context): \(reply.text)")
                cookie = reply.headers["set-cookie"].flatMap { $0.split(separator: ";").first.map(String.init) }
                #expect(cookie?.hasPrefix("AuthSession=") == true, "\(context): \(reply.headers)")
            case ("GET", ""):
                let reply = try await replay(exchange, to: base)
                #expect(reply.status == 200 && reply.json?["db_name"] == exchange.responseJSON?["db_name"], "\(context): \(reply.text)")
            case (_, "_local"), ("POST", "_bulk_docs"):
                let reply = try await replay(exchange, to: base)
                #expect(reply.status == exchange.status, "\(context): \(reply.text)")
                #expect(reply.json == exchange.responseJSON, "\(context): \(reply.text)")
            case ("POST", "_ensure_full_commit"):
                let reply = try await replay(exchange, to: base)
                #expect(reply.status == 201 && reply.json?["ok"] == .bool(true), "\(context): \(reply.text)")
            case ("POST", "_revs_diff"):
                let reply = try await replay(exchange, to: base)
                #expect(reply.status == 200 && reply.json == exchange.responseJSON, "\(context): \(reply.text)")
            case ("POST", "_bulk_get"):
                let reply = try await replay(exchange, to: base)
                #expect(reply.status == 200, "\(context): \(reply.text)")
                #expect(keptResults(reply.json) == keptResults(exchange.responseJSON), "\(context)")
            case ("GET", "_changes"), ("POST", "_changes"):
                try await changes(exchange, context: context)
            case ("GET", _) where exchange.query.contains("open_revs"):
                let reply = try await replay(exchange, to: base)
                #expect(reply.status == 200, "\(context): \(reply.text)")
                let expected = Self.documentPart(exchange.responseBody)
                // Attachments follow as parts of a nested multipart/related, decoded: CouchDB's
                // gzip transfer fields (`encoding`, `encoded_length`) are the only difference.
                if case .string(let id)? = expected?["_id"], !refused.contains(id) {
                    #expect(
                        Self.documentPart(Array(reply.text.utf8)) == expected.map(withoutGzipTransferFields), "\(context): \(reply.text)")
                }
            case ("PUT", _):
                let reply = try await replay(exchange, to: base)
                #expect(reply.status == exchange.status && reply.json == exchange.responseJSON, "\(context): \(reply.text)")
                if (exchange.requestHeaders["Content-Type"] ?? "").hasPrefix("multipart/") {
                    multipartPuts.insert(String(parts[1...].joined(separator: "/")))
                }
            default:
                Issue.record("\(context): a request this replay does not know")
            }
        }
        try await finishOpenFeed()
    }

    /// One of the replicator's requests, with its session cookie.
    private func replay(_ exchange: TranscriptExchange, to base: String, path: String? = nil, body: [UInt8]? = nil) async throws
        -> HTTPReply
    {
        try await CouchetteTests.replay(exchange, to: base, path: path, body: body, cookie: cookie)
    }

    /// Waits for the continuous feed to end and compares it.
    private func finishOpenFeed() async throws {
        guard let (task, exchange, context) = openFeed else { return }
        openFeed = nil
        compareChanges(try await task.value, exchange, context: context, continuous: true)
    }

    /// `_changes`: `since` mapped to Couchette's sequence; the same documents and revisions
    /// (without refused ones); CouchDB's `last_seq` then stands for Couchette's.
    private func changes(_ exchange: TranscriptExchange, context: String) async throws {
        var query = exchange.query.split(separator: "&").map(String.init)
        var feed = "normal"
        for (index, item) in query.enumerated() {
            if item.hasPrefix("since=") {
                let theirs = String(item.dropFirst(6)).removingPercentEncoding ?? ""
                guard let ours = sequences[theirs] else {
                    Issue.record("\(context): since=\(theirs.prefix(12))… was never answered as a last_seq")
                    return
                }
                query[index] = "since=" + (ours.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? ours)
            }
            if item.hasPrefix("feed=") { feed = String(item.dropFirst(5)) }
            // CouchDB's replicator waits 10 s; 1.5 s shows the same here, except while a source
            // edit is still to come in the feed: the requests replayed before it may take long.
            if item.hasPrefix("timeout="), duringContinuousFeed.isEmpty { query[index] = "timeout=1500" }
        }
        let path = exchange.route + "?" + query.joined(separator: "&")
        if feed == "continuous" {
            // Open while the replicator goes on: its answer is compared when it ends.
            let (base, cookie) = (self.base, self.cookie)
            let task = Task { try await CouchetteTests.replay(exchange, to: base, path: path, cookie: cookie) }
            openFeed = (task, exchange, context)
            try await Task.sleep(for: .milliseconds(200))
            continuousFeeds += 1
            return
        }
        compareChanges(try await replay(exchange, to: base, path: path), exchange, context: context, continuous: false)
    }

    private func compareChanges(_ reply: HTTPReply, _ exchange: TranscriptExchange, context: String, continuous: Bool) {
        var expectedText = String(decoding: exchange.responseBody ?? [], as: UTF8.self)
        if continuous, let json = exchange.responseJSON { expectedText = JSON.string(from: json) }
        #expect(reply.status == 200, "\(context): \(reply.text)")
        let (ourRows, ourLast) = Self.rows(reply.text, continuous: continuous)
        let (theirRows, theirLast) = Self.rows(expectedText, continuous: continuous)
        #expect(ourRows == theirRows.filter { !refused.contains($0.components(separatedBy: " ")[0]) }, "\(context)")
        if let theirLast, let ourLast { sequences[theirLast] = ourLast } else { Issue.record("\(context): no last_seq") }
    }

    /// "id rev rev…" for each row, and `last_seq` as text, of a normal or continuous `_changes` body.
    private nonisolated static func rows(_ text: String, continuous: Bool) -> (Set<String>, String?) {
        var objects: [Value] = []
        var last: Value?
        if continuous {
            for line in text.split(separator: "\n") {
                guard let object = try? JSON.parse(String(line)) else { continue }
                if let seq = object["last_seq"] { last = seq } else { objects.append(object) }
            }
        } else if let json = try? JSON.parse(text) {
            if case .array(let results)? = json["results"] { objects = results }
            last = json["last_seq"]
        }
        let rows = objects.compactMap { row -> String? in
            guard case .string(let id)? = row["id"], case .array(let changes)? = row["changes"] else { return nil }
            let revs = changes.compactMap { if case .string(let rev)? = $0["rev"] { rev } else { nil } }.sorted()
            return ([id] + revs).joined(separator: " ")
        }
        let lastText: String? =
            switch last {
            case .string(let text)?: text
            case let other?: JSON.string(from: other)
            case nil: nil
            }
        return (Set(rows), lastText)
    }

    /// The `_bulk_get` results of documents not refused, by id.
    private func keptResults(_ json: Value?) -> [String: Value] {
        guard case .array(let results)? = json?["results"] else { return [:] }
        var kept: [String: Value] = [:]
        for result in results {
            if case .string(let id)? = result["id"], !refused.contains(id) { kept[id] = result["docs"] }
        }
        return kept
    }

    /// The nested `multipart/related` part of a `multipart/mixed` `open_revs` answer (a revision
    /// with its attachments), read with the listener's own multipart reader.
    nonisolated static func relatedPart(_ exchange: TranscriptExchange) throws -> (contentType: String, body: Data)? {
        guard let type = exchange.responseHeaders["Content-Type"], type.hasPrefix("multipart/mixed"), let body = exchange.responseBody
        else {
            return nil
        }
        var reader = try MultipartReader(contentType: type)
        var related: (contentType: String, body: Data)?
        for event in try reader.feed(body) {
            switch event {
            case .part(let headers):
                if let inner = headers["content-type"], inner.hasPrefix("multipart/related") { related = (inner, Data()) }
            case .data(let bytes):
                related?.body.append(bytes)
            case .partEnd, .end:
                break
            }
        }
        try reader.finish()
        return related
    }

    /// The JSON document in a `multipart/mixed` (or nested `multipart/related`) `open_revs` answer.
    nonisolated static func documentPart(_ body: [UInt8]?) -> Value? {
        guard let body else { return nil }
        let text = String(decoding: body, as: UTF8.self)
        for line in text.components(separatedBy: "\r\n") where line.hasPrefix("{") {
            if let json = try? JSON.parse(line), json["_id"] != nil { return json }
        }
        return nil
    }
}
