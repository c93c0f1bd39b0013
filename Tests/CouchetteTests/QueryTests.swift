import Foundation
import Testing

@testable import Couchette

/// The seed's query subset end to end: SELECT paths, aliases, META(), `*`, FROM forms, WHERE,
/// ORDER BY, LIMIT/OFFSET, parameters, deleted and expired documents.
@Suite(.tags(.sanitizeAddress, .sanitizeAddress)) struct QueryTests {
    /// A `tasks` collection with three tasks.
    private func withTasks(_ body: (Database, Collection) async throws -> Void) async throws {
        try await withDatabase("app") { db, _ in
            let tasks = try await db.createCollection(name: "tasks")
            for (id, title, done, priority) in [("t1", "Buy milk", false, 2), ("t2", "Walk dog", true, 1), ("t3", "Write/read", false, 3)] {
                try await tasks.save(
                    document: MutableDocument(id: id).setString(title, forKey: "title")
                        .setBoolean(done, forKey: "done").setInt(priority, forKey: "priority"))
            }
            try await body(db, tasks)
        }
    }

    @Test func seedQueryReturnsIdAndTitle() async throws {
        try await withTasks { db, _ in
            let results = try await db.createQuery("SELECT meta().id AS id, title FROM _default.tasks").execute()
            #expect(results.columnNames == ["id", "title"])
            #expect(
                results.map { $0.toJSON() } == [
                    #"{"id":"t1","title":"Buy milk"}"#, #"{"id":"t2","title":"Walk dog"}"#, #"{"id":"t3","title":"Write/read"}"#,
                ])
            let first = try #require(results.allResults().first)
            #expect(first.string(at: 0) == "t1")
            #expect(first.string(forKey: "title") == "Buy milk")
            #expect(first.keys == ["id", "title"])
        }
    }

    @Test func starAndAliasedStar() async throws {
        try await withTasks { db, _ in
            let star = try await db.createQuery("SELECT * FROM tasks WHERE meta().id = 't1'").execute().allResults()
            #expect(star.map { $0.toJSON() } == [#"{"tasks":{"done":false,"priority":2,"title":"Buy milk"}}"#])
            let data = try await db.createQuery("SELECT meta().id AS id, * AS data FROM _default.tasks WHERE priority = 1").execute()
                .allResults()
            #expect(data.map { $0.toJSON() } == [#"{"id":"t2","data":{"done":true,"priority":1,"title":"Walk dog"}}"#])
            #expect(data[0].dictionary(forKey: "data")?.string(forKey: "title") == "Walk dog")
            let aliased = try await db.createQuery("SELECT t.*, t.title FROM tasks AS t WHERE t.priority = 3").execute().allResults()
            #expect(
                aliased.map { $0.toJSON() } == [
                    #"{"t":{"done":false,"priority":3,"title":"Write/read"}}"#.dropLast() + #","title":"Write/read"}"#
                ])
        }
    }

    @Test(arguments: [
        ("SELECT * FROM _", "_"),
        ("SELECT * FROM _default", "_default"),
        ("SELECT * FROM _default._default", "_default"),
        ("SELECT * FROM app", "app"),
        ("SELECT * FROM _default AS d", "d"),
        ("SELECT * FROM app d", "d"),
    ])
    func defaultCollectionForms(sql: String, column: String) async throws {
        try await withDatabase("app") { db, _ in
            try await db.defaultCollection().save(document: MutableDocument(id: "a").setInt(1, forKey: "n"))
            let results = try await db.createQuery(sql).execute().allResults()
            #expect(results.map { $0.toJSON() } == ["{\"\(column)\":{\"n\":1}}"])
        }
    }

    @Test func scopedCollectionsAndUnknownCollections() async throws {
        try await withDatabase("app") { db, _ in
            let notes = try await db.createCollection(name: "notes", scope: "work")
            try await notes.save(document: MutableDocument(id: "n1").setString("hi", forKey: "text"))
            #expect(try await queryJSON(db, "SELECT text FROM work.notes") == [#"{"text":"hi"}"#])
            #expect(try await queryJSON(db, "SELECT n.text, meta(n).id FROM work.notes AS n") == [#"{"text":"hi","id":"n1"}"#])
            #expect(try await queryJSON(db, "SELECT work.notes.text AS t FROM work.notes") == [#"{"t":"hi"}"#])
            for sql in ["SELECT * FROM notes", "SELECT * FROM nope.notes", "SELECT * FROM work.nope", "SELECT * FROM other"] {
                let message = await expectCouchetteError(.invalidQuery) { _ = try db.createQuery(sql) }
                #expect(message?.contains("no collection") == true, "\(sql): \(message ?? "")")
            }
        }
    }

    @Test func whereOrderByLimitOffsetMatchTheFixture() async throws {
        try await withDatabase { db, _ in
            let people = try await db.createCollection(name: "people")
            let ids = try await Fixtures.load("data/names_100.json", into: people, in: db)
            let documents = try Fixtures.documents("data/names_100.json")
            // Expected rows computed from the fixture in Swift.
            let expected = zip(ids, documents)
                .filter { ($0.1["gender"] as? String) == "female" }
                .map {
                    (
                        id: $0.0, last: (($0.1["name"] as? [String: Any])?["last"] as? String) ?? "",
                        first: (($0.1["name"] as? [String: Any])?["first"] as? String) ?? ""
                    )
                }
                .sorted { ($0.last, $1.first) < ($1.last, $0.first) }  // last ASC, first DESC
            let sql =
                "SELECT meta().id AS id, name.last, name.first FROM people WHERE gender = 'female' ORDER BY name.last, name.first DESC"
            let all = try await db.createQuery(sql).execute().allResults()
            #expect(all.count == expected.count && !expected.isEmpty)
            #expect(all.map { $0.string(forKey: "id") ?? "" } == expected.map(\.id))

            for (suffix, range) in [
                (" LIMIT 5", 0..<5), (" LIMIT 5 OFFSET 3", 3..<8), (" OFFSET 3 LIMIT 5", 3..<8),
                (" OFFSET \(expected.count - 2)", (expected.count - 2)..<expected.count), (" LIMIT 0", 0..<0),
                (" LIMIT -1", 0..<0),
            ] {
                let rows = try await db.createQuery(sql + suffix).execute().map { $0.string(forKey: "id") ?? "" }
                #expect(rows == Array(expected[range].map(\.id)), "\(suffix)")
            }
            // LIMIT without ORDER BY stops early but still returns the first rows in id order.
            let firstTwo = try await db.createQuery("SELECT meta().id FROM people LIMIT 2").execute().map { $0.string(at: 0) ?? "" }
            #expect(firstTwo == Array(ids.prefix(2)))
        }
    }

    @Test func parameters() async throws {
        try await withTasks { db, _ in
            let query = try db.createQuery("SELECT meta().id AS id FROM tasks WHERE priority >= $min AND done = $done ORDER BY id LIMIT $n")
            let message = await expectCouchetteError(.invalidQuery) { _ = try await query.execute() }
            #expect(message?.contains("$done, $min, $n") == true, "\(message ?? "")")
            let parameters = Parameters().setInt(2, forName: "min").setBoolean(false, forName: "done").setInt(10, forName: "n")
            query.parameters = parameters
            #expect(try await query.execute().map { $0.toJSON() } == [#"{"id":"t1"}"#, #"{"id":"t3"}"#])
            parameters.setInt(3, forName: "min")  // the query keeps its own copy
            #expect(try await query.execute().count(where: { _ in true }) == 2)
            query.parameters = parameters
            #expect(try await query.execute().map { $0.toJSON() } == [#"{"id":"t3"}"#])
            #expect(query.parameters?.value(forName: "min") as? Int == 3)
            query.parameters = Parameters().setValue(Date.distantFuture.addingTimeInterval(1e12), forName: "min")
                .setBoolean(true, forName: "done").setInt(1, forName: "n")
            await expectCouchetteError(.invalidParameter) { _ = try await query.execute() }
        }
    }

    @Test func deletedAndExpiredDocumentsAreExcluded() async throws {
        try await withTasks { db, tasks in
            let doomed = try #require(try await tasks.document(id: "t2"))
            try await tasks.delete(document: doomed)
            try await tasks.setDocumentExpiration(id: "t3", expiration: Date(timeIntervalSinceNow: -1))
            #expect(try await queryJSON(db, "SELECT meta().id FROM tasks") == [#"{"id":"t1"}"#])
            // Mentioning META().deleted makes tombstones visible (Couchbase Lite's rule).
            #expect(
                try await queryJSON(db, "SELECT meta().id, meta().deleted FROM tasks") == [
                    #"{"id":"t1","deleted":false}"#, #"{"id":"t2","deleted":true}"#,
                ])
            #expect(try await queryJSON(db, "SELECT meta().id FROM tasks WHERE meta().deleted") == [#"{"id":"t2"}"#])
        }
    }

    @Test func metaProperties() async throws {
        try await withTasks { db, tasks in
            let expiry = Date(timeIntervalSinceNow: 3600)
            try await tasks.setDocumentExpiration(id: "t1", expiration: expiry)
            let rows = try await db.createQuery(
                "SELECT META().id, META(t).sequence, meta().revisionID, META().expiration FROM tasks t ORDER BY META().sequence DESC"
            ).execute().allResults()
            #expect(rows.map { $0.string(forKey: "id") ?? "" } == ["t3", "t2", "t1"])
            for row in rows {
                let document = try #require(try await tasks.document(id: row.string(at: 0) ?? ""))
                #expect(row.int64(forKey: "sequence") == Int64(document.sequence))
                #expect(row.string(forKey: "revisionID") == document.revisionID)
            }
            #expect(rows.last?.int64(forKey: "expiration") == Int64((expiry.timeIntervalSince1970 * 1000).rounded(.down)))
            #expect(rows.first?.value(forKey: "expiration") == nil)
            #expect(rows.first?.keys == ["id", "sequence", "revisionID", "expiration"])
        }
    }

    @Test func resultValuesAndJSON() async throws {
        try await withDatabase { db, _ in
            let json = #"{"i":7,"d":2.5,"whole":3.0,"n":null,"s":"a/b \"q\"","list":[1,{"x":"y"}],"obj":{"k":[true]}}"#
            try await db.defaultCollection().save(document: MutableDocument(id: "v", json: json))
            let sql = "SELECT i, d, whole, n, nothing, s, list, obj, i / 2 AS half, d * 2 AS twice, 1.5e300 * 10 AS big FROM _"
            let results = try await db.createQuery(sql).execute()
            let row = try #require(results.allResults().first)
            #expect(
                row.toJSON()
                    == #"{"i":7,"d":2.5,"whole":3,"n":null,"s":"a/b \"q\"","list":[1,{"x":"y"}],"obj":{"k":[true]},"half":3,"twice":5,"big":1.5e+301}"#
            )
            #expect(row.count == 11)
            #expect(row.value(forKey: "nothing") == nil)
            #expect(row.value(at: 3) is NSNull)
            #expect(!row.contains(key: "nothing") && row.contains(key: "n"))
            #expect(row.array(forKey: "list")?.dictionary(at: 1)?.string(forKey: "x") == "y")
            #expect(row.dictionary(at: 7)?.array(forKey: "k")?.bool(at: 0) == true)
            #expect(row["obj"]["k"][0].bool)
            #expect(row.toDictionary()["nothing"] == nil && row.toDictionary().count == 10)
            #expect(row.toArray().count == 11 && row.toArray()[4] is NSNull)
            #expect(row.int(forKey: "half") == 3 && row.double(forKey: "d") == 2.5)
            // A ResultSet is a value: iterating twice gives the same rows.
            #expect(results.map { $0.toJSON() } == results.map { $0.toJSON() })
        }
    }

    @Test func explainDescribesThePlan() async throws {
        try await withTasks { db, _ in
            let plan = try await db.createQuery("SELECT title FROM tasks WHERE done ORDER BY title LIMIT 1").explain()
            #expect(plan.contains("SCAN _default.tasks"))
            #expect(plan.contains("FILTER") && plan.contains("SORT"))
        }
    }
}
