import Foundation
import Testing

@testable import Couchette

/// `_changes?filter=_selector` on the listener (answering as CouchDB did in transcripts a08 and
/// b05) and ``CollectionConfiguration/pullSelector`` over HTTP and in process.
@Suite struct SelectorReplicationTests {
    /// The exchanges of a transcript whose request path contains `filter=_selector`.
    static func selectorExchanges(_ file: String) throws -> [[String: Any]] {
        let data = try Data(contentsOf: URL(fileURLWithPath: Fixtures.path("couchdb-transcripts/\(file)")))
        let root = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        return try #require(root["exchanges"] as? [[String: Any]]).filter {
            (($0["request"] as? [String: Any])?["path"] as? String)?.contains("filter=_selector") == true
        }
    }

    /// A `_changes` answer reduced to what does not depend on the server: each row's id,
    /// deleted flag and document without `_rev`, by id.
    static func rows(_ answer: Any?) throws -> [String] {
        let results = try #require((answer as? [String: Any])?["results"] as? [[String: Any]])
        return try results.map { row in
            var summary: [String: Any] = ["id": try #require(row["id"] as? String), "deleted": row["deleted"] as? Bool ?? false]
            if var doc = row["doc"] as? [String: Any] {
                doc["_rev"] = nil
                summary["doc"] = doc
            }
            return String(decoding: try JSONSerialization.data(withJSONObject: summary, options: [.sortedKeys]), as: UTF8.self)
        }.sorted()
    }

    /// Replays each request of `exchanges` against the listener's database at `db` and compares
    /// the answers with CouchDB's.
    static func replay(_ exchanges: [[String: Any]], database prefix: String, against db: String) async throws {
        for exchange in exchanges {
            let request = try #require(exchange["request"] as? [String: Any])
            let expected = try #require(exchange["response"] as? [String: Any])
            let path = try #require(request["path"] as? String)
            let body = try request["body"].map { String(decoding: try JSONSerialization.data(withJSONObject: $0), as: UTF8.self) }
            let reply = try await httpRequest(
                try #require(request["method"] as? String),
                db + path.dropFirst(prefix.count), body: body)
            #expect(reply.status == expected["status"] as? Int, "\(path) \(body ?? "")")
            let answer = try JSONSerialization.jsonObject(with: Data(reply.text.utf8))
            if reply.status == 200 {
                #expect(try rows(answer) == rows(expected["body"]), "\(path) \(body ?? "")")
            } else {
                #expect(answer as? NSDictionary == expected["body"] as? NSDictionary, "\(path) \(body ?? ""): \(reply.text)")
            }
        }
    }

    @Test func listenerAnswersSelectorChangesAsCouchDB() async throws {
        let exchanges = try Self.selectorExchanges("a08-changes-filters.json")
        #expect(exchanges.count == 4)  // type x; v >= 2 with include_docs; _deleted; no selector (400)
        try await withDatabase { database, _ in
            // The documents of a08's database, as its answers show them.
            let collection = try database.defaultCollection()
            for (id, json) in [
                ("a", #"{"type":"x","v":1}"#), ("b", #"{"type":"y","v":3}"#), ("c", #"{"type":"x","v":5}"#),
                ("k", #"{"type":"x"}"#),
            ] {
                try await collection.save(document: try MutableDocument(id: id, json: json))
            }
            try await collection.delete(document: try #require(try await collection.document(id: "c")))
            try await withListener([collection]) { listener, _ in
                try await Self.replay(exchanges, database: "/t_changes", against: listener.urls[0].absoluteString)
            }
        }
    }

    @Test func listenerAnswersCouchDBReplicatorsSelectorRequest() async throws {
        let exchanges = try Self.selectorExchanges("b05-replicate-selector.json")
        #expect(exchanges.count == 1)
        try await withDatabase { database, _ in
            let collection = try database.defaultCollection()
            for n in 0..<12 {
                let document = MutableDocument(id: "d\(n)").setInt(n, forKey: "n").setString(n >= 10 ? "special" : "plain", forKey: "type")
                try await collection.save(document: document)
            }
            try await withListener([collection]) { listener, _ in
                try await Self.replay(exchanges, database: "/src", against: listener.urls[0].absoluteString)
            }
        }
    }

    @Test func listenerSelectorWorksWithEveryFeedAndLimit() async throws {
        try await withDatabase { database, _ in
            let collection = try database.defaultCollection()
            for n in 0..<20 {
                try await collection.save(document: MutableDocument(id: String(format: "d%02d", n)).setInt(n, forKey: "n"))
            }
            try await withListener([collection]) { listener, _ in
                let db = listener.urls[0].absoluteString
                let even = #"{"selector": {"n": {"$mod": [2, 0]}}}"#
                // limit counts matching rows; last_seq passes the rows skipped.
                let limited = try await httpRequest("POST", db + "/_changes?filter=_selector&limit=3", body: even)
                let ids = try #require(limited.json?["results"]).arrayIDs
                #expect(ids == ["d00", "d02", "d04"])
                let next = try await httpRequest(
                    "POST", db + "/_changes?filter=_selector&since=\(JSON.string(from: try #require(limited.json?["last_seq"])))",
                    body: even)
                #expect(try #require(next.json?["results"]).arrayIDs == stride(from: 6, to: 20, by: 2).map { String(format: "d%02d", $0) })
                // A long poll waits past changes that do not match, and answers with the first that does.
                let since = JSON.string(from: try #require(next.json?["last_seq"]))
                async let waited = httpRequest(
                    "POST", db + "/_changes?filter=_selector&feed=longpoll&timeout=10000&since=\(since)", body: even)
                try await Task.sleep(for: .milliseconds(300))
                try await collection.save(document: MutableDocument(id: "odd").setInt(21, forKey: "n"))
                try await Task.sleep(for: .milliseconds(300))
                try await collection.save(document: MutableDocument(id: "even").setInt(22, forKey: "n"))
                #expect(try #require(try await waited.json?["results"]).arrayIDs == ["even"])
                // continuous: only matching lines.
                let continuous = try await httpRequest(
                    "POST", db + "/_changes?filter=_selector&feed=continuous&timeout=300",
                    body: #"{"selector": {"n": {"$gte": 21}}}"#)
                let lines = continuous.text.split(separator: "\n").compactMap { try? JSON.parse(String($0)) }
                #expect(lines.compactMap { $0["id"] } == [.string("odd"), .string("even")])
                // An unknown operator is a 400 naming it; an unknown filter too.
                let bad = try await httpRequest("POST", db + "/_changes?filter=_selector", body: #"{"selector": {"n": {"$near": 1}}}"#)
                #expect(bad.status == 400 && bad.text.contains("invalid operator $near"))
                let unknown = try await httpRequest("GET", db + "/_changes?filter=app/only")
                #expect(unknown.status == 400)
            }
        }
    }

    // MARK: - pullSelector

    @Test(arguments: Transport.allCases)
    func pullSelectorPullsOnlyMatchingDocuments(transport: Transport) async throws {
        try await withTwoDatabases(over: transport) { local, remote, endpoint in
            let source = try remote.defaultCollection()
            for n in 0..<30 {
                let document = MutableDocument(id: "d\(n)").setInt(n, forKey: "n").setString(
                    n % 3 == 0 ? "special" : "plain", forKey: "type")
                try await source.save(document: document)
            }
            var collectionConfig = CollectionConfiguration()
            collectionConfig.pullSelector = ["$or": [["type": "special", "n": ["$lt": 20]], ["_deleted": true]]]
            #expect((collectionConfig.pullSelector?["$or"] as? [Any])?.count == 2)
            let replicator = try Replicator(config: try makeConfig(local, endpoint, .pull, collectionConfig))
            #expect(await runToCompletion(replicator).last?.error == nil)
            let pulled = try await queryJSON(local, "SELECT meta().id AS id FROM _ ORDER BY n")
            #expect(pulled == [0, 3, 6, 9, 12, 15, 18].map { #"{"id":"d\#($0)"}"# })

            // Later changes go through the same selector; the deletion passes by `_deleted`.
            try await source.delete(document: try #require(try await source.document(id: "d3")))
            try await source.save(document: MutableDocument(id: "d1").setInt(1, forKey: "n").setString("special", forKey: "type"))
            try await source.save(document: MutableDocument(id: "d4").setInt(4, forKey: "n").setString("plain", forKey: "type"))
            #expect(await runToCompletion(replicator).last?.error == nil)
            let after = try await queryJSON(local, "SELECT meta().id AS id FROM _ ORDER BY n")
            #expect(after == [0, 1, 6, 9, 12, 15, 18].map { #"{"id":"d\#($0)"}"# })
        }
    }

    @Test(arguments: Transport.allCases)
    func pullSelectorCombinesWithDocumentIDs(transport: Transport) async throws {
        try await withTwoDatabases(over: transport) { local, remote, endpoint in
            for n in 0..<10 {
                try await remote.defaultCollection().save(document: MutableDocument(id: "d\(n)").setInt(n, forKey: "n"))
            }
            var collectionConfig = CollectionConfiguration()
            collectionConfig.documentIDs = ["d1", "d2", "d8"]
            collectionConfig.pullSelector = ["n": ["$gt": 1]]
            let replicator = try Replicator(config: try makeConfig(local, endpoint, .pull, collectionConfig))
            #expect(await runToCompletion(replicator).last?.error == nil)
            #expect(try await queryJSON(local, "SELECT meta().id AS id FROM _ ORDER BY n") == [#"{"id":"d2"}"#, #"{"id":"d8"}"#])
        }
    }

    @Test func invalidPullSelectorIsRefusedByTheReplicator() async throws {
        try await withTwoDatabases { local, remote in
            var collectionConfig = CollectionConfiguration()
            collectionConfig.pullSelector = ["n": ["$between": [1, 2]]]
            #expect(collectionConfig.pullSelector == nil)
            let error = try #require(throws: CouchetteError.self) {
                _ = try Replicator(config: try makeConfig(local, remote, .pull, collectionConfig))
            }
            #expect(error.code == .invalidParameter && error.message.contains("$between"))
            collectionConfig.pullSelector = ["when": Data()]
            #expect(throws: CouchetteError.self) { _ = try Replicator(config: try makeConfig(local, remote, .pull, collectionConfig)) }
        }
    }
}

extension Value {
    /// The `id` of each element of a `results` array.
    fileprivate var arrayIDs: [String] {
        guard case .array(let rows) = self else { return [] }
        return rows.compactMap { if case .string(let id)? = $0["id"] { id } else { nil } }
    }
}
