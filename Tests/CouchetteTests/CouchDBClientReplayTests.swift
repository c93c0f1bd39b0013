import Foundation
import Testing

@testable import Couchette

/// Couchette's replicator (`RemotePeer` under the `Replicator`) against a fake server that
/// answers exactly as Apache CouchDB 3.5 did in the transcripts: long polls whose headers and
/// first body bytes come at once and rows later (`a05`, `a06`), and a pull of the source of `b01`
/// (its database info, `_changes`, `_bulk_get` answers, checkpoint and commit answers), where
/// the documents with attachments are skipped and reported and the rest completes.
@Suite(.serialized, .tags(.concurrency)) struct CouchDBClientReplayTests {
    private static func exchange(_ file: String, _ seq: Int) throws -> TranscriptExchange {
        try #require(try Transcript.load(file).first { $0.seq == seq })
    }

    @Test func longPollsWaitForTheRowsThatFollowTheHeaders() async throws {
        let change = try Self.exchange("a06-changes-longpoll-change", 1)
        let idle = try Self.exchange("a05-changes-longpoll-idle", 1)
        let server = try TranscriptServer { request in
            TranscriptServer.recorded(request.query["since"] == "idle" ? idle : change)
        }
        let peer = try RemotePeer(url: server.url("t_lp"))
        let clock = ContinuousClock()
        let start = clock.now
        let page = try await peer.changes(since: .string("now"), limit: 100, documentIDs: nil, wait: .longpoll(timeout: .seconds(10)))
        #expect(clock.now - start > .milliseconds(1400))
        #expect(page.results.map(\.id) == ["arrives-later"])
        #expect(page.results.first?.leafRevisions == ["1-b8f97323e7f26909d5e0c8d2764a765f"])
        #expect(
            page.lastSequence
                == .string(
                    "2-g1AAAACbeJzLYWBgYMpgTmEQTM4vTc5ISXIwNDLXMwBCwxyQVCJDUv3___-zMpgTGXKBAuwpRqlpaYkp2DTgMSaPBUgyNACp_1DTmMCmWSSmmSUbGWDTlwUAYkEpDg"
                ))

        let quiet = clock.now
        let nothing = try await peer.changes(since: .string("idle"), limit: 100, documentIDs: nil, wait: .longpoll(timeout: .seconds(3)))
        #expect(clock.now - quiet > .milliseconds(2900))
        #expect(nothing.results.isEmpty)
        #expect(
            nothing.lastSequence
                == .string(
                    "1-g1AAAACbeJzLYWBgYMpgTmEQTM4vTc5ISXIwNDLXMwBCwxyQVCJDUv3___-zMpgTGXKBAuwpRqlpaYkp2DTgMSaPBUgyNACp_1DTGMGmWSSmmSUbGWDTlwUAYh8pDQ"
                ))
        // The peer asked for a continuous feed first; this server ignores `feed` (as one without
        // continuous feeds may) and answered a long poll's body, whose first line tells so: the
        // peer long-polls from then on. (A continuous attempt that got no line at all before its
        // idle limit — a process starved that long — is tried again on the next call.)
        let sent = server.seen.withLock { $0 }
        #expect(sent.first?.query["feed"] == "continuous")
        let longPolls = sent.filter { $0.query["feed"] == "longpoll" }
        #expect(longPolls.count >= 2 && longPolls.allSatisfy { $0.query["style"] == "all_docs" })
        #expect(sent.allSatisfy { $0.query["feed"] == "continuous" || $0.query["feed"] == "longpoll" })
        await server.stop()
    }

    /// CouchDB's "src" of `b01` as a server: the recorded database info, `_changes` (since 0),
    /// `_bulk_get` entries (composed per requested revision from every one CouchDB answered, the
    /// `open_revs` answers standing in for revisions CouchDB's replicator fetched that way, their
    /// attachments as the stubs `_bulk_get` gives), missing checkpoints, commits.
    /// - Parameter bulkGet: false: a server without `_bulk_get` (404, as CouchDB before 2.3),
    ///   which the replicator reads per document from `open_revs` as multipart; the documents
    ///   CouchDB's replicator fetched that way get their recorded multipart answers, attachments
    ///   (gzip-encoded ones among them) and all, the others one JSON part.
    static func sourceOfB01(bulkGet: Bool = true) throws -> TranscriptServer {
        let exchanges = try Transcript.load("b01-replicate-initial").filter { $0.actor == "couchdb-replicator" }
        let info = try #require(exchanges.first { $0.method == "GET" && $0.route == "/src/" })
        let changes = try #require(exchanges.first { $0.route == "/src/_changes" })
        let missing = try #require(exchanges.first { $0.route.hasPrefix("/src/_local/") && $0.status == 404 })
        let commit = try #require(exchanges.first { $0.route == "/src/_ensure_full_commit" })
        var revisions: [String: Value] = [:]
        for exchange in exchanges where exchange.route.hasPrefix("/src/") {
            if exchange.route == "/src/_bulk_get", case .array(let results)? = exchange.responseJSON?["results"] {
                for case .array(let docs)? in results.map({ $0["docs"] }) {
                    for case let doc? in docs.map({ $0["ok"] }) { revisions[Self.key(doc)] = doc }
                }
            } else if exchange.query.contains("open_revs"), var doc = Self.documentPart(exchange.responseBody) {
                if case .dictionary(var object) = doc, case .dictionary(let attachments)? = object["_attachments"] {
                    object["_attachments"] = .dictionary(
                        attachments.mapValues { attachment in
                            guard case .dictionary(var fields) = attachment else { return attachment }
                            for key in ["follows", "encoding", "encoded_length"] { fields.removeValue(forKey: key) }
                            fields["stub"] = .bool(true)
                            return .dictionary(fields)
                        })
                    doc = .dictionary(object)
                }
                revisions[Self.key(doc)] = revisions[Self.key(doc)] ?? doc
            }
        }
        let recorded = revisions
        let openRevisions = exchanges.filter { $0.query.contains("open_revs") }
        return try TranscriptServer { request in
            switch (request.method, request.path) {
            case ("POST", "/src/_bulk_get") where !bulkGet:
                return TranscriptServer.json(.dictionary(["error": .string("not_found"), "reason": .string("missing")]), status: 404)
            case ("GET", let path) where !bulkGet && request.query["open_revs"] != nil:
                let id = String(path.dropFirst("/src/".count))
                let revs = (try? JSON.parse(request.query["open_revs"] ?? "")).flatMap {
                    if case .array(let list) = $0 { list } else { nil }
                }
                if let exchange = openRevisions.first(where: { $0.route == path }),
                    revs == [.string(Self.key(Self.documentPart(exchange.responseBody) ?? .null).components(separatedBy: " ").last ?? "")]
                {
                    return TranscriptServer.recorded(exchange)
                }
                guard case .string(let rev)? = revs?.first, let doc = recorded["\(id) \(rev)"] else {
                    return TranscriptServer.json(.dictionary(["error": .string("not_found"), "reason": .string("missing")]), status: 404)
                }
                let body = "--b\r\nContent-Type: application/json\r\n\r\n\(JSON.string(from: doc))\r\n--b--"
                return HTTPResponse(
                    status: 200, headers: [("Content-Type", "multipart/mixed; boundary=\"b\"")], body: .bytes(Array(body.utf8)))
            case ("GET", "/src"): return TranscriptServer.recorded(info)
            case ("GET", let path) where path.hasPrefix("/src/_local/"): return TranscriptServer.recorded(missing)
            case ("PUT", let path) where path.hasPrefix("/src/_local/"):
                return TranscriptServer.json(
                    .dictionary(["ok": .bool(true), "id": .string(String(path.dropFirst(5))), "rev": .string("0-1")]),
                    status: 201)
            case ("GET", "/src/_changes"):
                if request.query["since"] == nil || request.query["since"] == "0" { return TranscriptServer.recorded(changes) }
                // The first answer's last_seq again: nothing changed since.
                return TranscriptServer.json(
                    .dictionary([
                        "results": .array([]), "last_seq": changes.responseJSON?["last_seq"] ?? .null,
                        "pending": .int(0),
                    ]))
            case ("POST", "/src/_bulk_get"):
                let body = try? JSON.parse(String(decoding: request.body, as: UTF8.self))
                guard case .array(let docs)? = body?["docs"] else { return TranscriptServer.json(.null, status: 400) }
                return TranscriptServer.json(
                    .dictionary([
                        "results": .array(
                            docs.map { wanted in
                                let id = wanted["id"] ?? .null, rev = wanted["rev"] ?? .null
                                if case .string(let text) = id, case .string(let revText) = rev, let doc = recorded["\(text) \(revText)"] {
                                    return .dictionary(["id": id, "docs": .array([.dictionary(["ok": doc])])])
                                }
                                return .dictionary([
                                    "id": id,
                                    "docs": .array([
                                        .dictionary([
                                            "error": .dictionary([
                                                "id": id, "rev": rev, "error": .string("not_found"), "reason": .string("missing"),
                                            ])
                                        ])
                                    ]),
                                ])
                            })
                    ]))
            case ("POST", "/src/_ensure_full_commit"): return TranscriptServer.recorded(commit)
            default: return TranscriptServer.json(.dictionary(["error": .string("not_found"), "reason": .string("missing")]), status: 404)
            }
        }
    }

    private static func key(_ doc: Value) -> String {
        if case .string(let id)? = doc["_id"], case .string(let rev)? = doc["_rev"] { return "\(id) \(rev)" }
        return ""
    }

    /// The JSON document in a multipart `open_revs` answer.
    private static func documentPart(_ body: [UInt8]?) -> Value? {
        guard let body else { return nil }
        for line in String(decoding: body, as: UTF8.self).components(separatedBy: "\r\n") where line.hasPrefix("{\"_id\"") {
            if let json = try? JSON.parse(line) { return json }
        }
        return nil
    }

    @Test func pullingFromCouchDBSkipsDocumentsWithAttachmentsAndCompletes() async throws {
        let server = try Self.sourceOfB01()
        try await withDatabase("local") { db, _ in
            let collection = try db.defaultCollection()
            var config = ReplicatorConfiguration(target: URLEndpoint(url: server.url("src")))
            config.addCollection(collection)
            config.replicatorType = .pull
            let replicator = try Replicator(config: config)
            let events = replicator.documentReplications()
            let last = try #require(await runToCompletion(replicator).last)
            #expect(last.error == nil && last.activity == .stopped)
            // 27 documents in CouchDB (d03 deleted): the two with attachments stay there.
            #expect(try await collection.count == 25)
            #expect(try await collection.document(id: "_design/app") != nil)
            #expect(try await collection.document(id: "d04")?.revisionID == "2-cccccccccccccccccccccccccccccccc")
            var skipped: [String: String] = [:]
            var pulled = 0
            while let event = await events.next(timeout: .seconds(2)) {
                for document in event.documents {
                    if let error = document.error as? CouchetteError { skipped[document.id] = "\(error.code)" } else { pulled += 1 }
                }
                if pulled + skipped.count >= 28 { break }
            }
            // The transcript's answers carry stubs (CouchDB's replicator asked attachments=false):
            // content never sent is refused per document.
            #expect(skipped == ["att1": "http(412)", "att2": "http(412)"])
            #expect(pulled == 26)
            // The checkpoint went to CouchDB's side too, after its commit.
            let sent = server.seen.withLock { $0 }
            #expect(sent.contains { $0.method == "PUT" && $0.path.hasPrefix("/src/_local/") })
        }
        await server.stop()
    }

    /// The client role of CouchDB's multipart answers: without `_bulk_get`, every revision comes
    /// from `open_revs` as `multipart/mixed`, the two with attachments as CouchDB recorded them
    /// (nested `multipart/related`, `note.txt` and `data.json` gzip-encoded): all 27 land, the
    /// attachments decoded and stored.
    @Test func pullingCouchDBsMultipartOpenRevisionsStoresTheirAttachments() async throws {
        let server = try Self.sourceOfB01(bulkGet: false)
        try await withDatabase("local") { db, _ in
            let collection = try db.defaultCollection()
            var config = ReplicatorConfiguration(target: URLEndpoint(url: server.url("src")))
            config.addCollection(collection)
            config.replicatorType = .pull
            let last = try #require(await runToCompletion(try Replicator(config: config)).last)
            #expect(last.error == nil && last.activity == .stopped)
            #expect(try await collection.count == 27)
            let note = try #require(try await collection.document(id: "att1")?.dictionary(forKey: "_attachments")?.blob(forKey: "note.txt"))
            #expect(try await note.content() == Data(String(repeating: "a small text attachment\n", count: 3).utf8))
            let attachments = try #require(try await collection.document(id: "att2")?.dictionary(forKey: "_attachments"))
            #expect(try await attachments.blob(forKey: "data.json")?.content() == Data(#"{"hello":"world"}"#.utf8))
            #expect(try await attachments.blob(forKey: "pixel.png")?.content().count == 70)
            try await db.performMaintenance(type: .integrityCheck)
            let sent = server.seen.withLock { $0 }
            #expect(sent.filter { $0.query["open_revs"] != nil }.count >= 27)
        }
        await server.stop()
    }

    @Test func theCommandLineReportsEachSkippedDocumentAndFails() async throws {
        let server = try Self.sourceOfB01()
        let directory = try TemporaryDirectory()
        let pulled = try await CLI.run(["replicate", directory.path + "/local", server.url("src").absoluteString, "--pull"])
        #expect(pulled.status == 1)
        let lines = pulled.stdout.split(separator: "\n").map(String.init)
        #expect(lines.first?.hasPrefix("Pushed 0 documents, pulled 26, skipped 2 in ") == true, "\(pulled.stdout)")
        #expect(lines.first?.range(of: #" in \d+\.\d{3} s\.$"#, options: .regularExpression) != nil, "\(pulled.stdout)")
        #expect(lines.dropFirst().map { $0.prefix(25) }.sorted() == ["  skipped 'att1' (pulling", "  skipped 'att2' (pulling"])
        #expect(pulled.stdout.contains("was not sent"))
        #expect(pulled.stderr.contains("2 documents were skipped"), "\(pulled.stderr)")
        await server.stop()
    }
}
