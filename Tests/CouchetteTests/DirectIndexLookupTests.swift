import Foundation
import Testing

@testable import Couchette

/// Prepared queries that one index range answers run through ``DirectIndexLookup``: their rows
/// equal the general executor's (the same query with DISTINCT, which never takes that path) for
/// lookups, ranges, ordered walks with ties in both directions, composite indexes, LIMIT and
/// OFFSET as parameters, deleted, expired and design documents; `explain()` says when the direct
/// path runs; and the rows own every byte, after the file they were read from is unmapped.
@Suite(.tags(.sanitizeAddress)) struct DirectIndexLookupTests {
    private static func id(_ number: Int) -> String { "person-\(String(format: "%04d", number))" }

    private static func body(_ number: Int) -> [String: Any] {
        var body: [String: Any] = [
            // Shared by three documents each: a lookup finds several, in id order.
            "email": "user\(number % 97)@example.com",
            // Ties: about four documents a day.
            "birthday": String(format: "1970-%02d-%02d", 1 + number % 12, 1 + number / 48 % 28),
            "city": ["Oslo", "Lima", "Kyiv", "Pune"][number % 4],
            "name": ["first": "Ann \(number)", "last": "Lee \(number % 7)"],
            "visits": number % 11,
            // Too long for a whole index key: a range over it never decides the WHERE.
            "note": String(repeating: "n", count: 300) + "\(number % 5)",
        ]
        if number % 13 == 0 { body.removeValue(forKey: "email") }
        if number % 17 == 0 { body["email"] = number }  // another type
        return body
    }

    private static func load(_ database: Database, count: Int) async throws {
        let collection = try database.defaultCollection()
        try await database.inBatch { batch in
            for number in 0..<count {
                try batch.save(document: MutableDocument(id: Self.id(number), data: Self.body(number)), in: collection)
            }
            try batch.save(document: MutableDocument(id: "_design/app", data: Self.body(3)), in: collection)
        }
        try await collection.createIndex(withName: "by-email", config: ValueIndexConfiguration(["email"]))
        try await collection.createIndex(withName: "by-birthday", config: ValueIndexConfiguration(["birthday"]))
        try await collection.createIndex(withName: "by-city-name", config: ValueIndexConfiguration(["city", "name.first"]))
        try await collection.createIndex(withName: "by-note", config: ValueIndexConfiguration(["note"]))
        // Invisible documents: deleted, expired.
        for number in stride(from: 5, to: count, by: 50) {
            try await collection.delete(document: try #require(try await collection.document(id: Self.id(number))))
        }
        for number in stride(from: 7, to: count, by: 50) {
            try await collection.setDocumentExpiration(id: Self.id(number), expiration: Date(timeIntervalSinceNow: -60))
        }
    }

    private static func rows(_ query: Query) async throws -> [String] {
        try await query.execute().map { $0.toJSON() }
    }

    @Test func rowsEqualTheGeneralExecutor() async throws {
        try await withDatabase { database, _ in
            try await Self.load(database, count: 400)
            // (condition, extra columns the ORDER BY needs, whether the direct path runs for a string value)
            let cases: [(String, String, Bool)] = [
                ("WHERE email = $value", "", true),
                ("WHERE email >= $value", "", true),
                ("WHERE email <= $value", "", true),
                ("WHERE birthday >= $value ORDER BY birthday LIMIT 7", ", birthday", true),
                ("WHERE birthday >= $value ORDER BY birthday LIMIT $limit OFFSET $offset", ", birthday", true),
                ("WHERE birthday <= $value ORDER BY birthday DESC LIMIT 9 OFFSET 2", ", birthday", true),
                ("WHERE birthday >= $value ORDER BY birthday DESC LIMIT 5", ", birthday", true),
                ("WHERE city >= $value ORDER BY city LIMIT 12", ", city", true),
                ("WHERE birthday >= $value ORDER BY birthday LIMIT 0", ", birthday", true),
                ("WHERE birthday >= $value ORDER BY birthday LIMIT 1000", ", birthday", true),
                // Stored keys of long notes are cut, yet they sort on the right side of a whole
                // key: a short bound still decides the WHERE (a long one does not).
                ("WHERE note >= $value", "", true),
                // The general executor: a WHERE the range does not decide, an ORDER BY the range
                // does not deliver, an equality with ORDER BY (planned per execution).
                ("WHERE email >= $value AND visits > 3", "", false),
                ("WHERE email >= $value ORDER BY visits LIMIT 4", ", visits", false),
                ("WHERE email = $value ORDER BY email LIMIT 2", ", email", false),
            ]
            let values: [Any] = [
                "user5@example.com", "user0@example.com", "user96@example.com", "nobody", "", "1970-03-10", "1970-12-28",
                "1971", "Kyiv", "Lima", String(repeating: "n", count: 300) + "2", 17, NSNull(),
            ]
            var compared = 0
            for (condition, extra, direct) in cases {
                let columns = "META().id AS id, name.first AS first, name.last, visits\(extra)"
                let lean = try database.createQuery("SELECT \(columns) FROM _ \(condition)")
                let general = try database.createQuery("SELECT DISTINCT \(columns) FROM _ \(condition)")
                for value in values {
                    let parameters = Parameters().setValue(value, forName: "value").setInt(4, forName: "limit").setInt(3, forName: "offset")
                    lean.parameters = parameters
                    general.parameters = parameters
                    let expected = try await Self.rows(general)
                    #expect(try await Self.rows(lean) == expected, "\(condition) with \(value)")
                    compared += expected.count
                    let explained = try await lean.explain()
                    // Only string values bound whole decide a WHERE; other values use the executor.
                    let runsDirect = direct && value is String && (value as! String).count < 200
                    if !(value is NSNull) {  // null bounds no range: nothing to read, either way
                        #expect(explained.contains("DIRECT LOOKUP") == runsDirect, "\(condition) with \(value): \(explained)")
                    }
                    #expect(try await general.explain().contains("DIRECT LOOKUP") == false)
                }
            }
            #expect(compared > 2000)
        }
    }

    @Test func tiesComeInIdOrderInBothDirections() async throws {
        try await withDatabase { database, _ in
            let collection = try database.defaultCollection()
            // Ids saved out of order; every document has one of two dates.
            try await database.inBatch { batch in
                for number in [9, 3, 7, 1, 8, 2, 6, 0, 5, 4] {
                    try batch.save(
                        document: MutableDocument(id: "d\(number)", data: ["day": number % 2 == 0 ? "2000-01-01" : "2000-01-02"]),
                        in: collection)
                }
            }
            try await collection.createIndex(withName: "by-day", config: ValueIndexConfiguration(["day"]))
            let ascending = try database.createQuery("SELECT META().id AS id, day FROM _ WHERE day >= $from ORDER BY day LIMIT 7")
            ascending.parameters = Parameters().setString("2000", forName: "from")
            #expect(try await ascending.explain().contains("DIRECT LOOKUP"))
            #expect(try await ascending.execute().map { $0.string(at: 0)! } == ["d0", "d2", "d4", "d6", "d8", "d1", "d3"])
            let descending = try database.createQuery("SELECT META().id AS id, day FROM _ WHERE day <= $to ORDER BY day DESC LIMIT 7")
            descending.parameters = Parameters().setString("2001", forName: "to")
            #expect(try await descending.explain().contains("DIRECT LOOKUP"))
            #expect(try await descending.execute().map { $0.string(at: 0)! } == ["d1", "d3", "d5", "d7", "d9", "d0", "d2"])
        }
    }

    @Test func parametersAreCheckedAndCopied() async throws {
        try await withDatabase { database, _ in
            try await Self.load(database, count: 60)
            let query = try database.createQuery("SELECT META().id AS id FROM _ WHERE email = $value")
            await #expect(throws: CouchetteError.self) { try await query.execute() }
            do {
                _ = try await query.execute()
            } catch let error as CouchetteError {
                #expect(error.code == .invalidQuery && error.message.contains("$value is not set"))
            }
            let parameters = Parameters().setString("nobody", forName: "value").setString("user6@example.com", forName: "value")
            query.parameters = parameters
            parameters.setString("user8@example.com", forName: "value")  // after the assignment: no effect
            #expect(try await query.execute().map { $0.string(at: 0)! } == [Self.id(6)])
            let copy = try #require(query.parameters)
            #expect(copy.value(forName: "value") as? String == "user6@example.com")
            copy.setString("user8@example.com", forName: "value")  // a copy: no effect either
            #expect(query.parameters?.value(forName: "value") as? String == "user6@example.com")
            #expect(try await query.execute().map { $0.string(at: 0)! } == [Self.id(6)])

            // An unusable value fails the execution, even for a parameter the query does not use.
            query.parameters = Parameters().setString("user6@example.com", forName: "value").setValue(NSObject(), forName: "other")
            do {
                _ = try await query.execute()
                Issue.record("an unusable parameter value was accepted")
            } catch let error as CouchetteError {
                #expect(error.code == .invalidParameter)
            }
            query.parameters = nil
            await #expect(throws: CouchetteError.self) { try await query.execute() }
        }
    }

    @Test func rowsOutliveRewritesAndTheClosedDatabase() async throws {
        let directory = try TemporaryDirectory()
        let database = try directory.open("direct")
        try await Self.load(database, count: 300)
        let lookup = try database.createQuery("SELECT META().id AS id, name.first AS first, name, note FROM _ WHERE email = $value")
        lookup.parameters = Parameters().setString("user9@example.com", forName: "value")
        let walk = try database.createQuery(
            "SELECT META().id AS id, birthday, name, name.last AS last FROM _ WHERE birthday >= $value ORDER BY birthday LIMIT 25")
        walk.parameters = Parameters().setString("1970-02", forName: "value")
        #expect(try await lookup.explain().contains("DIRECT LOOKUP"))
        #expect(try await walk.explain().contains("DIRECT LOOKUP"))
        let found = Array(try await lookup.execute()), walked = Array(try await walk.execute())
        let expected = (found + walked).map { $0.toJSON() }
        #expect(found.count == 3 && walked.count == 25)

        // Every page those rows were read from is freed and written again, then the map is gone.
        let collection = try database.defaultCollection()
        for round in 0..<8 {
            try await database.inBatch { batch in
                for number in 0..<300 where number % 50 != 5 && number % 50 != 7 {
                    let data: [String: Any] = ["round": round, "filler": String(repeating: "y", count: 300)]
                    try batch.save(document: MutableDocument(id: Self.id(number), data: data), in: collection)
                }
            }
        }
        for number in 0..<150 where number % 50 != 5 && number % 50 != 7 { try await collection.purge(id: Self.id(number)) }
        try await database.close()  // unmaps the file

        #expect((found + walked).map { $0.toJSON() } == expected)
        for result in found + walked {
            let id = try #require(result.string(forKey: "id"))
            let number = try #require(Int(id.dropFirst("person-".count)))
            #expect(result.dictionary(forKey: "name")?.string(forKey: "first") == "Ann \(number)")
        }
        #expect(found.map { $0.string(forKey: "first") } == ["Ann 9", "Ann 106", "Ann 203"])
        #expect(found.allSatisfy { $0.string(forKey: "note")?.count == 301 })
        #expect(walked.allSatisfy { ($0.string(forKey: "birthday") ?? "") >= "1970-02" })
    }

    /// The key a lookup probes the index with, built on the stack, is the stored encoding of the
    /// string after the index's entries prefix, escapes included.
    @Test func stackKeyIsTheStoredEncoding() {
        let prefix: [UInt8] = [0, 0, 0, 7]
        for text in ["", "a", "user5@example.com", "a\u{0}b\u{0}", "\u{0}", "Zoë 東京", String(repeating: "x", count: 240)] {
            let built = IndexKey.withStringKey(prefix: prefix, text) { Array($0) }
            #expect(built == prefix + IndexKey.encode(.string(text)), "\(text.debugDescription)")
        }
    }

    /// A prepared lookup reads a snapshot of its own at each execution: it sees every commit made
    /// since the last one (new, changed and deleted documents), and the deletion of its
    /// collection, after which it fails as the general executor does.
    @Test func seesEveryCommitAndItsCollection() async throws {
        try await withDatabase { database, _ in
            let people = try await database.createCollection(name: "people")
            try await people.save(document: MutableDocument(id: "b", data: ["email": "ann@example.com", "n": 1]))
            try await people.createIndex(withName: "by-email", config: ValueIndexConfiguration(["email"]))
            let query = try database.createQuery("SELECT META().id AS id, n FROM people WHERE email = $email")
            query.parameters = Parameters().setString("ann@example.com", forName: "email")
            #expect(try await query.explain().contains("DIRECT LOOKUP"))
            func ids() async throws -> [String] { try await query.execute().map { $0.string(at: 0)! } }
            #expect(try await ids() == ["b"])

            try await people.save(document: MutableDocument(id: "a", data: ["email": "ann@example.com", "n": 2]))
            #expect(try await ids() == ["a", "b"])
            try await people.save(document: MutableDocument(id: "b", data: ["email": "bob@example.com", "n": 3]))
            #expect(try await ids() == ["a"])
            #expect(try await query.execute().map { $0.int(at: 1) } == [2])
            try await people.delete(document: try #require(try await people.document(id: "a")))
            #expect(try await ids() == [])
            query.parameters = Parameters().setString("bob@example.com", forName: "email")
            #expect(try await ids() == ["b"])

            try await database.deleteCollection(name: "people")
            await expectCouchetteError(.notOpen) { _ = try await query.execute() }
        }
    }

    /// Strings holding NUL (escaped in keys), a literal instead of a parameter, and a value of
    /// another type (the general executor) all find what the general executor finds.
    @Test func escapedStringsAndLiteralsAreLookedUp() async throws {
        try await withDatabase { database, _ in
            let collection = try database.defaultCollection()
            let emails: [Any] = ["a\u{0}b", "a", "a\u{0}", "a\u{0}b", "ab", 7, "Zoë"]
            for (number, email) in emails.enumerated() {
                try await collection.save(document: MutableDocument(id: "d\(number)", data: ["email": email]))
            }
            try await collection.createIndex(withName: "by-email", config: ValueIndexConfiguration(["email"]))
            let lookup = try database.createQuery("SELECT META().id AS id FROM _ WHERE email = $email")
            let general = try database.createQuery("SELECT DISTINCT META().id AS id FROM _ WHERE email = $email")
            for value in ["a\u{0}b", "a", "a\u{0}", "ab", "Zoë", "none"] as [Any] + [7] {
                let parameters = Parameters().setValue(value, forName: "email")
                lookup.parameters = parameters
                general.parameters = parameters
                let expected = try await Self.rows(general)
                #expect(try await Self.rows(lookup) == expected, "\(value)")
                #expect(try await lookup.explain().contains("DIRECT LOOKUP") == (value is String))
            }
            lookup.parameters = Parameters().setString("a\u{0}b", forName: "email")
            #expect(try await lookup.execute().map { $0.string(at: 0)! } == ["d0", "d3"])
            let literal = try database.createQuery("SELECT META().id AS id FROM _ WHERE email = 'ab'")
            #expect(try await literal.explain().contains("DIRECT LOOKUP"))
            #expect(try await literal.execute().map { $0.string(at: 0)! } == ["d4"])
        }
    }
}
