import Foundation
import Testing

@testable import Couchette

/// The CouchDB HTTP API served by `URLEndpointListener`, over real HTTP on loopback. Serialized:
/// each test runs a server whose handlers need the cooperative pool that the rest of the suite shares.
@Suite(.serialized, .tags(.concurrency, .sanitizeAddress)) struct ListenerTests {
    @Test func serverAndDatabaseInfo() async throws {
        try await withDatabase("shop") { db, _ in
            try await db.defaultCollection().save(document: MutableDocument(id: "a").setInt(1, forKey: "n"))
            try await withListener([try db.defaultCollection()]) { listener, base in
                #expect(listener.port != nil && listener.port != 0)
                #expect(listener.urls.map(\.absoluteString) == ["\(base)/shop"])
                let root = try await httpRequest("GET", base + "/")
                #expect(root.status == 200 && root.json?["couchdb"] == .string("Welcome"))
                guard case .string(let uuid)? = root.json?["uuid"] else { Issue.record("no uuid: \(root.text)"); return }
                #expect(uuid.count == 32 && uuid.allSatisfy(\.isHexDigit))
                // The server id is the database's: another listener on it reports the same one.
                try await withListener([try db.defaultCollection()]) { _, again in
                    let answer = try await httpRequest("GET", again + "/")
                    #expect(answer.json?["uuid"] == .string(uuid))
                }
                let info = try await httpRequest("GET", base + "/shop")
                #expect(info.status == 200)
                #expect(info.json?["db_name"] == .string("shop"))
                #expect(info.json?["doc_count"] == .int(1))
                #expect(info.json?["update_seq"] == .int(1))
                #expect(try await httpRequest("HEAD", base + "/shop").status == 200)
                let missing = try await httpRequest("GET", base + "/nope")
                #expect(missing.status == 404 && missing.json?["error"] == .string("not_found"))
            }
        }
    }

    @Test func namedCollectionsUseTheirKeyspace() async throws {
        try await withDatabase("shop") { db, _ in
            let items = try await db.createCollection(name: "items", scope: "inventory")
            try await withListener([try db.defaultCollection(), items]) { listener, base in
                #expect(listener.urls.map(\.absoluteString) == ["\(base)/shop", "\(base)/shop.inventory.items"])
                let put = try await httpRequest("PUT", base + "/shop.inventory.items/widget", body: #"{"price":3}"#)
                #expect(put.status == 201)
                #expect(try await items.document(id: "widget")?.int(forKey: "price") == 3)
                #expect(try await db.defaultCollection().document(id: "widget") == nil)
            }
        }
    }

    @Test func documentReadWriteDelete() async throws {
        try await withDatabase("db") { db, _ in
            let collection = try db.defaultCollection()
            try await withListener([collection]) { _, base in
                let created = try await httpRequest("PUT", base + "/db/doc1", body: #"{"name":"ann","tags":[1,2]}"#)
                #expect(created.status == 201 && created.json?["ok"] == .bool(true))
                guard case .string(let rev1)? = created.json?["rev"] else { Issue.record("no rev: \(created.text)"); return }
                #expect(try await collection.document(id: "doc1")?.revisionID == rev1)

                let read = try await httpRequest("GET", base + "/db/doc1")
                #expect(read.json?["_id"] == .string("doc1") && read.json?["_rev"] == .string(rev1))
                #expect(read.json?["name"] == .string("ann"))

                let stale = try await httpRequest("PUT", base + "/db/doc1", body: #"{"name":"bob"}"#)
                #expect(stale.status == 409 && stale.json?["error"] == .string("conflict"))
                let updated = try await httpRequest("PUT", base + "/db/doc1", body: #"{"_rev":"\#(rev1)","name":"bob"}"#)
                #expect(updated.status == 201)
                guard case .string(let rev2)? = updated.json?["rev"] else { Issue.record("no rev"); return }
                #expect(rev2.hasPrefix("2-"))

                let history = try await httpRequest("GET", base + "/db/doc1?revs=true")
                #expect(history.json?["_revisions"]?["start"] == .int(2))
                #expect(
                    history.json?["_revisions"]?["ids"] == .array([.string(String(rev2.dropFirst(2))), .string(String(rev1.dropFirst(2)))]))

                let deleted = try await httpRequest("DELETE", base + "/db/doc1?rev=\(rev2)")
                #expect(deleted.status == 200 && deleted.json?["ok"] == .bool(true))
                let gone = try await httpRequest("GET", base + "/db/doc1")
                #expect(gone.status == 404 && gone.json?["reason"] == .string("deleted"))
                #expect(try await collection.document(id: "doc1") == nil)

                // Ids with a slash travel as %2F.
                #expect(try await httpRequest("PUT", base + "/db/a%2Fb", body: #"{"x":1}"#).status == 201)
                #expect(try await collection.document(id: "a/b") != nil)
                #expect(try await httpRequest("GET", base + "/db/a%2Fb").json?["_id"] == .string("a/b"))
            }
        }
    }

    @Test func replicationEndpoints() async throws {
        try await withDatabase("db") { db, _ in
            let collection = try db.defaultCollection()
            try await withListener([collection]) { _, base in
                let docs = #"""
                    {"new_edits":false,"docs":[
                      {"_id":"x","_rev":"3-ccc","_revisions":{"start":3,"ids":["ccc","bbb","aaa"]},"v":3},
                      {"_id":"y","_rev":"1-yyy","_deleted":true}
                    ]}
                    """#
                let written = try await httpRequest("POST", base + "/db/_bulk_docs", body: docs)
                #expect(written.status == 201 && written.json == .array([]), "\(written.text)")
                #expect(try await collection.document(id: "x")?.revisionID == "3-ccc")

                let diff = try await httpRequest(
                    "POST", base + "/db/_revs_diff", body: #"{"x":["3-ccc","4-ddd"],"y":["1-yyy"],"z":["1-zzz"]}"#)
                #expect(diff.json?["x"]?["missing"] == .array([.string("4-ddd")]))
                #expect(diff.json?["x"]?["possible_ancestors"] == .array([.string("3-ccc")]))
                #expect(diff.json?["y"] == nil)
                #expect(diff.json?["z"]?["missing"] == .array([.string("1-zzz")]))

                let fetched = try await httpRequest(
                    "POST", base + "/db/_bulk_get?revs=true",
                    body: #"{"docs":[{"id":"x","rev":"3-ccc"},{"id":"y","rev":"1-yyy"},{"id":"x","rev":"9-nope"}]}"#)
                let results = fetched.json?["results"]
                #expect(results?[0]?["id"] == .string("x"))
                let doc = results?[0]?["docs"]?[0]?["ok"]
                #expect(doc?["v"] == .int(3) && doc?["_rev"] == .string("3-ccc"))
                #expect(doc?["_revisions"] == .dictionary(["start": .int(3), "ids": .array(["ccc", "bbb", "aaa"].map(Value.string))]))
                #expect(results?[1]?["docs"]?[0]?["ok"]?["_deleted"] == .bool(true))
                #expect(results?[2]?["docs"]?[0]?["error"]?["error"] == .string("not_found"))

                // A conflicting branch, then open_revs=all shows both leaves.
                _ = try await httpRequest(
                    "PUT", base + "/db/x?new_edits=false",
                    body: #"{"_rev":"3-eee","_revisions":{"start":3,"ids":["eee","bbb","aaa"]},"v":33}"#)
                let open = try await httpRequest("GET", base + "/db/x?open_revs=all&revs=true", headers: ["Accept": "application/json"])
                guard case .array(let leaves)? = open.json else { Issue.record("open_revs: \(open.text)"); return }
                #expect(
                    Set(leaves.compactMap { row -> String? in if case .string(let rev)? = row["ok"]?["_rev"] { rev } else { nil } }) == [
                        "3-ccc", "3-eee",
                    ])
                let listed = try await httpRequest(
                    "GET", base + #"/db/x?open_revs=["3-eee","5-zzz"]"#.addingPercentEncoding(withAllowedCharacters: .urlQueryAllowed)!,
                    headers: ["Accept": "application/json"])
                #expect(listed.json?[0]?["ok"]?["v"] == .int(33))
                #expect(listed.json?[1]?["missing"] == .string("5-zzz"))
                #expect(try await httpRequest("GET", base + "/db/x?rev=1-aaa").status == 404)
                #expect(try await httpRequest("GET", base + "/db/x?rev=3-eee").json?["v"] == .int(33))

                let bulk = try await httpRequest(
                    "POST", base + "/db/_bulk_docs", body: #"{"docs":[{"_id":"n1","a":1},{"_id":"x","v":0},{"a":2}]}"#)
                #expect(bulk.json?[0]?["ok"] == .bool(true))
                #expect(bulk.json?[1]?["error"] == .string("conflict"))
                // A document without _id is named in the answer with the id it was given.
                guard case .string(let generated)? = bulk.json?[2]?["id"] else { Issue.record("no generated id: \(bulk.text)"); return }
                #expect(try await collection.document(id: generated)?.int(forKey: "a") == 2)
            }
        }
    }

    @Test func bulkGetWithLatestAnswersTheLeafThatReplacedARevision() async throws {
        try await withDatabase("db") { db, _ in
            try await withListener([try db.defaultCollection()]) { _, base in
                _ = try await httpRequest(
                    "POST", base + "/db/_bulk_docs",
                    body: #"{"new_edits":false,"docs":[{"_id":"l","_rev":"2-bbb","_revisions":{"start":2,"ids":["bbb","aaa"]},"v":2}]}"#)
                let request = #"{"docs":[{"id":"l","rev":"1-aaa"},{"id":"gone"}]}"#
                let latest = try await httpRequest("POST", base + "/db/_bulk_get?revs=true&latest=true", body: request)
                #expect(latest.json?["results"]?[0]?["docs"]?[0]?["ok"]?["_rev"] == .string("2-bbb"), "\(latest.text)")
                #expect(latest.json?["results"]?[1]?["docs"]?[0]?["error"]?["rev"] == .string("undefined"))
                let exact = try await httpRequest("POST", base + "/db/_bulk_get?revs=true", body: request)
                #expect(exact.json?["results"]?[0]?["docs"]?[0]?["error"]?["error"] == .string("not_found"), "\(exact.text)")
            }
        }
    }

    @Test func localDocumentsAllDocsAndFullCommit() async throws {
        try await withDatabase("db") { db, _ in
            let collection = try db.defaultCollection()
            for id in ["b", "a", "c"] { try await collection.save(document: MutableDocument(id: id).setString(id, forKey: "v")) }
            try await withListener([collection]) { _, base in
                #expect(try await httpRequest("GET", base + "/db/_local/cp").status == 404)
                let put = try await httpRequest("PUT", base + "/db/_local/cp", body: #"{"last_seq":7,"history":[]}"#)
                #expect(put.status == 201 && put.json?["id"] == .string("_local/cp"))
                let read = try await httpRequest("GET", base + "/db/_local/cp")
                #expect(read.json?["last_seq"] == .int(7) && read.json?["_id"] == .string("_local/cp"))

                let commit = try await httpRequest("POST", base + "/db/_ensure_full_commit", body: "{}")
                #expect(commit.status == 201 && commit.json?["ok"] == .bool(true))

                let all = try await httpRequest("GET", base + "/db/_all_docs?include_docs=true")
                #expect(all.json?["total_rows"] == .int(3))
                guard case .array(let rows)? = all.json?["rows"] else { Issue.record("rows: \(all.text)"); return }
                #expect(rows.map { $0["id"] } == ["a", "b", "c"].map(Value.string))
                #expect(rows[0]["doc"]?["v"] == .string("a"))
                let page = try await httpRequest("GET", base + "/db/_all_docs?startkey=%22b%22&limit=1")
                #expect(page.json?["rows"]?[0]?["key"] == .string("b"))
                #expect(page.json?["rows"]?[1] == nil)
            }
        }
    }

    @Test func changesFeeds() async throws {
        try await withDatabase("db") { db, _ in
            let collection = try db.defaultCollection()
            for id in ["a", "b", "c"] { try await collection.save(document: MutableDocument(id: id)) }
            try await collection.delete(document: try #require(await collection.document(id: "b")))
            try await withListener([collection]) { _, base in
                let normal = try await httpRequest("GET", base + "/db/_changes?style=all_docs")
                guard case .array(let rows)? = normal.json?["results"] else { Issue.record("results: \(normal.text)"); return }
                #expect(rows.map { $0["id"] } == ["a", "c", "b"].map(Value.string))
                #expect(rows[2]["deleted"] == .bool(true))
                #expect(rows[0]["changes"]?[0]?["rev"] != nil)
                #expect(normal.json?["last_seq"] == .int(4))

                let limited = try await httpRequest("GET", base + "/db/_changes?since=1&limit=1")
                #expect(limited.json?["results"]?[0]?["id"] == .string("c"))
                #expect(limited.json?["results"]?[1] == nil)
                #expect(limited.json?["last_seq"] == .int(3))

                let filtered = try await httpRequest("POST", base + "/db/_changes?filter=_doc_ids", body: #"{"doc_ids":["c"]}"#)
                #expect(filtered.json?["results"]?[0]?["id"] == .string("c") && filtered.json?["results"]?[1] == nil)
                let filteredGet = try await httpRequest("GET", base + "/db/_changes?filter=_doc_ids&doc_ids=%5B%22a%22%5D")
                #expect(filteredGet.json?["results"]?[0]?["id"] == .string("a") && filteredGet.json?["results"]?[1] == nil)

                // longpoll: waits for the next save.
                async let waited = httpRequest("GET", base + "/db/_changes?feed=longpoll&since=4&timeout=8000")
                try await Task.sleep(for: .milliseconds(200))
                try await collection.save(document: MutableDocument(id: "late"))
                let longpoll = try await waited
                #expect(longpoll.json?["results"]?[0]?["id"] == .string("late"))

                // longpoll with nothing new ends at the timeout, empty.
                let empty = try await httpRequest("GET", base + "/db/_changes?feed=longpoll&since=now&timeout=100")
                #expect(empty.json?["results"] == .array([]))

                // continuous: a line per change, then last_seq at the timeout.
                async let feed = httpRequest("GET", base + "/db/_changes?feed=continuous&since=5&timeout=1500&heartbeat=200")
                try await Task.sleep(for: .milliseconds(200))
                try await collection.save(document: MutableDocument(id: "live"))
                let lines = try await feed.text.split(separator: "\n").compactMap { try? JSON.parse(String($0)) }
                #expect(lines.first?["id"] == .string("live"))
                #expect(lines.last?["last_seq"] == .int(6))
            }
        }
    }

    /// A long poll or a feed without heartbeats writes nothing while it waits, so it notices a
    /// client that left only when its wait ends: the waits a client asks for are capped at CouchDB's
    /// `changes_timeout` (60 s), however long, and the feed still works.
    @Test func changesWaitsAreCappedAtCouchDBsChangesTimeout() async throws {
        #expect(ListenerRouter.changesWait(milliseconds: Int.max) == .seconds(60))
        #expect(ListenerRouter.changesWait(milliseconds: 60_001) == .seconds(60))
        #expect(ListenerRouter.changesWait(milliseconds: 1500) == .milliseconds(1500))
        try await withDatabase("db") { db, _ in
            let collection = try db.defaultCollection()
            try await withListener([collection]) { _, base in
                async let waited = httpRequest("GET", base + "/db/_changes?feed=longpoll&since=now&timeout=\(Int.max)")
                async let feed = httpRequest(
                    "GET", base + "/db/_changes?feed=continuous&since=now&timeout=1500&heartbeat=\(Int.max)")
                try await Task.sleep(for: .milliseconds(200))
                try await collection.save(document: MutableDocument(id: "late"))
                #expect(try await waited.json?["results"]?[0]?["id"] == .string("late"))
                let lines = try await feed.text.split(separator: "\n").compactMap { try? JSON.parse(String($0)) }
                #expect(lines.first?["id"] == .string("late"))
            }
        }
    }

    @Test func malformedRequestsGetJSONErrorsAndTheListenerSurvives() async throws {
        try await withDatabase("db") { db, _ in
            try await withListener([try db.defaultCollection()], configure: { $0.maximumRequestBodySize = 1000 }) { listener, base in
                let badJSON = try await httpRequest("PUT", base + "/db/doc", body: "{not json")
                #expect(badJSON.status == 400 && badJSON.json?["error"] == .string("bad_request"))
                let notObject = try await httpRequest("PUT", base + "/db/doc", body: "[1]")
                #expect(notObject.status == 400)
                let badRev = try await httpRequest("PUT", base + "/db/doc", body: #"{"_rev":"banana"}"#)
                #expect(badRev.status == 400)
                let badHistory = try await httpRequest(
                    "POST", base + "/db/_bulk_docs",
                    body: #"{"new_edits":false,"docs":[{"_id":"q","_rev":"2-b","_revisions":{"start":2,"ids":[7]}}]}"#)
                #expect(badHistory.json?[0]?["error"] == .string("bad_request"), "\(badHistory.text)")
                #expect(try await httpRequest("POST", base + "/db/_revs_diff", body: "[]").status == 400)
                #expect(try await httpRequest("POST", base + "/db/_bulk_get", body: #"{"docs":5}"#).status == 400)
                #expect(try await httpRequest("GET", base + "/db/_changes?feed=sideways").status == 400)
                #expect(try await httpRequest("GET", base + "/db/_changes?limit=-3").status == 400)
                #expect(try await httpRequest("PUT", base + "/db/_reserved", body: "{}").status == 400)
                let method = try await httpRequest("DELETE", base + "/db/_changes")
                #expect(method.status == 405 && method.json?["error"] == .string("method_not_allowed"))
                let oversize = try await httpRequest(
                    "PUT", base + "/db/big", body: "{\"x\":\"" + String(repeating: "y", count: 5000) + "\"}")
                #expect(oversize.status == 413 && oversize.json?["error"] == .string("too_large"))

                let garbage = await rawExchange(port: listener.port!, Array("NOT HTTP AT ALL\r\n\r\n".utf8))
                #expect(!garbage.contains(" 200 "))
                let truncated = await rawExchange(
                    port: listener.port!, Array("PUT /db/t HTTP/1.1\r\nContent-Length: 100\r\n\r\n{\"a\":".utf8))
                #expect(!truncated.contains(" 201 "))
                #expect(try await db.defaultCollection().document(id: "t") == nil)
                #expect(try await httpRequest("GET", base + "/db").status == 200)
            }
        }
    }

    @Test func basicAuthentication() async throws {
        try await withDatabase("db") { db, _ in
            try await withListener(
                [try db.defaultCollection()],
                configure: {
                    $0.authenticator = ListenerPasswordAuthenticator { user, password in user == "alice" && password == "s3cret" }
                }
            ) { _, base in
                let anonymous = try await httpRequest("GET", base + "/db")
                #expect(anonymous.status == 401 && anonymous.json?["error"] == .string("unauthorized"))
                let wrong = try await httpRequest(
                    "GET", base + "/db", headers: ["Authorization": "Basic " + Data("alice:nope".utf8).base64EncodedString()])
                #expect(wrong.status == 401)
                let right = try await httpRequest(
                    "GET", base + "/db", headers: ["Authorization": "Basic " + Data("alice:s3cret".utf8).base64EncodedString()])
                #expect(right.status == 200)
            }
        }
    }

    @Test func readOnlyRefusesWritesButServesReadsAndCheckpoints() async throws {
        try await withDatabase("db") { db, _ in
            try await withListener([try db.defaultCollection()], configure: { $0.readOnly = true }) { _, base in
                let put = try await httpRequest("PUT", base + "/db/doc", body: "{}")
                #expect(put.status == 403 && put.json?["error"] == .string("forbidden"))
                #expect(try await httpRequest("POST", base + "/db/_bulk_docs", body: #"{"docs":[]}"#).status == 403)
                #expect(try await httpRequest("GET", base + "/db/_changes").status == 200)
                #expect(try await httpRequest("PUT", base + "/db/_local/cp", body: "{}").status == 201)
                #expect(try await db.defaultCollection().count == 0)
            }
        }
    }

    @Test func stopClosesOpenFeedsAndConnections() async throws {
        try await withDatabase("db") { db, _ in
            let listener = URLEndpointListener(config: plainHTTPListenerConfiguration([try db.defaultCollection()]))
            try await listener.start()
            let base = "http://127.0.0.1:\(listener.port!)"
            // A continuous feed with no timeout holds a connection open until stop().
            let feed = Task { try await httpRequest("GET", base + "/db/_changes?feed=continuous&heartbeat=100") }
            #expect(await eventually(timeout: .seconds(30)) { listener.status.activeConnectionCount >= 1 })
            #expect(listener.status.connectionCount >= 1)
            await listener.stop()
            #expect(listener.port == nil && listener.urls.isEmpty)
            #expect(listener.status == ConnectionStatus(connectionCount: 0, activeConnectionCount: 0))
            _ = try? await feed.value  // ended (either a complete body or a closed connection), not hung
            await #expect(throws: (any Error).self) { try await httpRequest("GET", base + "/db") }
            // And it can start again.
            try await listener.start()
            #expect(try await httpRequest("GET", "http://127.0.0.1:\(listener.port!)/db").status == 200)
            await listener.stop()
        }
    }

    @Test func startErrors() async throws {
        try await withDatabase("db") { db, _ in
            let empty = URLEndpointListener(config: URLEndpointListenerConfiguration(collections: []))
            await expectCouchetteError(.invalidParameter) { try await empty.start() }
            try await withListener([try db.defaultCollection()]) { listener, _ in
                var config = plainHTTPListenerConfiguration([try db.defaultCollection()])
                config.port = listener.port!
                let second = URLEndpointListener(config: config)
                await expectCouchetteError(.io) { try await second.start() }
            }
        }
    }
}
