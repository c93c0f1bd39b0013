import Foundation
import Testing

@testable import Couchette

/// The HTTP client (`RemotePeer`, under the ``Replicator``) against responses written by hand from
/// the CouchDB 3.x API reference — opaque string sequences, `_bulk_get` result shapes, `_local`
/// revisions — served by a small civetweb fixture server on loopback.
@Suite(.serialized, .tags(.concurrency)) struct CouchDBInteropTests {
    /// CouchDB 3.x sequences are opaque strings (`<n>-<base64 of the shard clock>`).
    static let seq1 = "1-g1AAAAFTeJzLYWBg4MhgTmHgzcvPy09JdcjLz8gvLskBCScyJNX___8_K4M5kTEXKMBuZmxgYGpkjKwYh_Y8FiDJ0ACk_kNNSWQAAF5PHRs"
    static let seq2 = "2-g1AAAAFTeJzLYWBg4MhgTmHgzcvPy09JdcjLz8gvLskBCScyJNX___8_K4M5kTEXKMBuZmxgYGpkjKwYh_Y8FiDJ0ACk_kNNSWQAAF5PHRw"

    /// A fixture "CouchDB 3.3" serving database `db` with two documents, recording every request.
    final class FixtureServer: Sendable {
        struct Seen: Sendable {
            let method: String; let path: String; let query: [String: String]; let headers: [String: String]; let body: Value?
        }
        let seen = Locked<[Seen]>([])
        let server: HTTPServer
        let port: UInt16

        init() throws {
            let seen = self.seen
            server = HTTPServer(maximumBodySize: 1 << 20) { request in
                let body = request.body.isEmpty ? nil : try? JSON.parse(String(decoding: request.body, as: UTF8.self))
                seen.withLock {
                    $0.append(Seen(method: request.method, path: request.path, query: request.query, headers: request.headers, body: body))
                }
                return FixtureServer.answer(request, body)
            }
            port = try server.start(host: "127.0.0.1", port: 0, threads: 4)
        }

        var base: String { "http://127.0.0.1:\(port)/db" }

        static func json(_ text: String, _ status: Int = 200) -> HTTPResponse {
            HTTPResponse(
                status: status, headers: [("Content-Type", "application/json"), ("Server", "CouchDB/3.3.3 (Erlang OTP/24)")],
                body: .bytes(Array(text.utf8)))
        }

        static func answer(_ request: HTTPRequest, _ body: Value?) -> HTTPResponse {
            switch (request.method, request.path) {
            case ("GET", "/db"):
                return json(
                    #"{"instance_start_time":"0","db_name":"db","purge_seq":"0-g1AAAABXeJzLYWBgYMpgTmHgz8tPSTV0MDQy1zMAQsMcoARTIkOS_P___7MymBMZc4EC7MmWySkW5ubYNOAxJY8FSDI0AKn_UFMyWRMZcGjIAQBeJR0b","update_seq":"\#(seq2)","sizes":{"file":41024,"external":315,"active":1194},"props":{},"doc_del_count":1,"doc_count":1,"disk_format_version":8,"compact_running":false,"cluster":{"q":2,"n":1,"w":1,"r":1}}"#
                )
            case ("GET", let path) where path.hasPrefix("/db/_local/"):
                return json(#"{"error":"not_found","reason":"missing"}"#, 404)
            case ("PUT", let path) where path.hasPrefix("/db/_local/"):
                return json(#"{"ok":true,"id":"\#(path.dropFirst(4))","rev":"0-1"}"#, 201)
            case ("GET", "/db/_changes"), ("POST", "/db/_changes"):
                if request.query["since"] == nil {
                    return json(
                        #"""
                        {"results":[
                        {"seq":"\#(seq1)","id":"apple","changes":[{"rev":"2-7051cbe5c8faecd085a3fa619e6e6337"}]},
                        {"seq":"\#(seq2)","id":"pear","changes":[{"rev":"1-967a00dff5e02add41819138abb3284d"}],"deleted":true},
                        {"seq":"\#(seq2)","id":"fig","changes":[{"rev":"1-4c6114c65e295552ab1019e2b046b10e"}]}
                        ],
                        "last_seq":"\#(seq2)","pending":0}
                        """#)
                }
                return json(#"{"results":[],"last_seq":"\#(request.query["since"] ?? "")","pending":0}"#)
            case ("POST", "/db/_bulk_get"):
                return json(
                    #"""
                    {"results":[
                    {"id":"apple","docs":[{"ok":{"_id":"apple","_rev":"2-7051cbe5c8faecd085a3fa619e6e6337","color":"red","sizes":[1,2.5],"_revisions":{"start":2,"ids":["7051cbe5c8faecd085a3fa619e6e6337","967a00dff5e02add41819138abb3284d"]}}}]},
                    {"id":"pear","docs":[{"ok":{"_id":"pear","_rev":"1-967a00dff5e02add41819138abb3284d","_deleted":true,"_revisions":{"start":1,"ids":["967a00dff5e02add41819138abb3284d"]}}}]},
                    {"id":"fig","docs":[{"ok":{"_id":"fig","_rev":"1-4c6114c65e295552ab1019e2b046b10e","_attachments":{"photo.jpg":{"content_type":"image/jpeg","revpos":1,"digest":"md5-2SnyuQ0WKIGmafbKYoFhQg==","length":3402,"stub":true}},"_revisions":{"start":1,"ids":["4c6114c65e295552ab1019e2b046b10e"]}}}]}
                    ]}
                    """#)
            case ("POST", "/db/_revs_diff"):
                // Everything offered is missing here.
                guard case .dictionary(let offered)? = body else {
                    return json(#"{"error":"bad_request","reason":"Request body must be a JSON object"}"#, 400)
                }
                let diff = offered.mapValues { Value.dictionary(["missing": $0]) }
                return json(JSON.string(from: .dictionary(diff)))
            case ("POST", "/db/_bulk_docs"):
                return json("[]", 201)
            case ("POST", "/db/_ensure_full_commit"):
                return json(#"{"ok":true,"instance_start_time":"0"}"#, 201)
            case (_, "/locked"):
                return HTTPResponse(
                    status: 401, headers: [("Content-Type", "application/json"), ("WWW-Authenticate", "Basic realm=\"server\"")],
                    body: .bytes(Array(#"{"error":"unauthorized","reason":"Authentication required."}"#.utf8)))
            default:
                return json(#"{"error":"not_found","reason":"Database does not exist."}"#, 404)
            }
        }
    }

    @Test func pullFromCouchDBKeepsSequencesOpaqueAndGraftsHistory() async throws {
        let fixture = try FixtureServer()
        try await withDatabase("local") { db, _ in
            var config = ReplicatorConfiguration(target: URLEndpoint(url: URL(string: fixture.base)!))
            config.addCollection(try db.defaultCollection())
            config.replicatorType = .pull
            let replicator = try Replicator(config: config)
            let events = replicator.documentReplications()
            let last = try #require(await runToCompletion(replicator).last)
            #expect(last.error == nil, "\(String(describing: last.error))")
            // A document whose attachment arrives as a stub for content this database never got is
            // refused on its own (CouchDB's missing_stub); the others land.
            let event = try #require(await events.next(timeout: .seconds(5)))
            let fig = try #require(event.documents.first { $0.id == "fig" })
            #expect((fig.error as? CouchetteError)?.code == .http(status: 412))
            #expect(try await db.defaultCollection().document(id: "fig") == nil)

            let apple = try #require(await db.defaultCollection().document(id: "apple"))
            #expect(apple.revisionID == "2-7051cbe5c8faecd085a3fa619e6e6337")
            #expect(apple.string(forKey: "color") == "red")
            #expect(
                try treeShape(db.defaultCollection(), "apple")
                    == [
                        "1-967a00dff5e02add41819138abb3284d<root",
                        "2-7051cbe5c8faecd085a3fa619e6e6337<1-967a00dff5e02add41819138abb3284d leaf",
                    ])
            #expect(try await db.defaultCollection().document(id: "pear") == nil)
            #expect(try currentRevisions(db.defaultCollection())["pear"] == "1-967a00dff5e02add41819138abb3284d")

            let seen = fixture.seen.withLock { $0 }
            let changes = seen.filter { $0.path == "/db/_changes" }
            #expect(changes.first?.query["style"] == "all_docs")
            // The sequence goes back exactly as CouchDB sent it: as the next since, and in the checkpoint.
            #expect(changes.dropFirst().allSatisfy { $0.query["since"] == Self.seq2 })
            let checkpoint = seen.last { $0.method == "PUT" && $0.path.hasPrefix("/db/_local/") }
            #expect(checkpoint.map { JSON.string(from: $0.body ?? .null).contains(Self.seq2) } == true)
            let bulkGet = try #require(seen.first { $0.path == "/db/_bulk_get" })
            #expect(bulkGet.query["revs"] == "true")
            #expect(bulkGet.headers["accept-encoding"]?.contains("gzip") == true, "\(bulkGet.headers)")
        }
        await fixture.server.stop()
    }

    @Test func pushToCouchDBSendsRevisionHistoriesWithoutNewEdits() async throws {
        let fixture = try FixtureServer()
        try await withDatabase("local") { db, _ in
            let collection = try db.defaultCollection()
            let doc = MutableDocument(id: "plum").setString("purple", forKey: "color")
            try await collection.save(document: doc)
            try await collection.save(document: doc.setInt(2, forKey: "n"))
            var config = ReplicatorConfiguration(target: URLEndpoint(url: URL(string: fixture.base)!))
            config.addCollection(collection)
            config.replicatorType = .push
            let last = try #require(await runToCompletion(try Replicator(config: config)).last)
            #expect(last.error == nil, "\(String(describing: last.error))")

            let seen = fixture.seen.withLock { $0 }
            let diff = try #require(seen.first { $0.path == "/db/_revs_diff" })
            #expect(diff.body?["plum"] == .array([.string(doc.revisionID!)]))
            let bulk = try #require(seen.first { $0.path == "/db/_bulk_docs" })
            #expect(bulk.body?["new_edits"] == .bool(false))
            let sent = bulk.body?["docs"]?[0]
            #expect(sent?["_id"] == .string("plum") && sent?["_rev"] == .string(doc.revisionID!))
            #expect(sent?["color"] == .string("purple") && sent?["n"] == .int(2))
            #expect(sent?["_revisions"]?["start"] == .int(2))
            #expect(sent?["_revisions"]?["ids"]?[1] != nil)
            // The written documents are made durable before the checkpoint names them.
            let commit = try #require(seen.firstIndex { $0.path == "/db/_ensure_full_commit" })
            let checkpoint = try #require(seen.firstIndex { $0.method == "PUT" && $0.path.hasPrefix("/db/_local/") })
            #expect(seen.firstIndex { $0.path == "/db/_bulk_docs" }! < commit && commit < checkpoint)
        }
        await fixture.server.stop()
    }

    @Test func challengesAndErrorsFromTheServerAreTyped() async throws {
        let fixture = try FixtureServer()
        let locked = try RemotePeer(url: URL(string: "http://127.0.0.1:\(fixture.port)/locked")!)
        await expectCouchetteError(.unauthorized) { _ = try await locked.info() }
        let missing = try RemotePeer(url: URL(string: "http://127.0.0.1:\(fixture.port)/nodb")!)
        let message = await expectCouchetteError(.http(status: 404)) { _ = try await missing.info() }
        #expect(message?.contains("Database does not exist") == true)
        await fixture.server.stop()
    }
}
