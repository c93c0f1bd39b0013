import Foundation
import Testing

@testable import Couchette

/// Index lookups project fetched documents where they lie in the map (``InPlaceProjection``):
/// the rows equal those of the owned evaluation (the same query with DISTINCT, which never
/// projects in place) for every kind of column, and they own every byte — they stay whole after
/// the pages they were read from are rewritten and the file is unmapped.
@Suite(.tags(.sanitizeAddress)) struct InPlaceProjectionTests {
    private static func body(_ number: Int) -> [String: Any] {
        var body: [String: Any] = [
            "email": "person-\(number % 40)@example.com",
            "rank": number % 17,
            "name": ["first": "Ann \(number)", "last": number % 3 == 0 ? NSNull() as Any : "Lee \(number % 5)"],
            "tags": number % 4 == 0 ? [] : ["t\(number % 7)", number, ["deep": number % 2 == 0]],
            "ratio": Double(number) / 8, "active": number % 2 == 0, "big": Int64.max - Int64(number),
            "text": String(repeating: "é", count: number % 9),
        ]
        if number % 5 == 0 { body["name"] = "a string, not a dictionary" }
        if number % 6 == 0 { body.removeValue(forKey: "tags") }
        return body
    }

    /// Documents `doc-000` onwards with ``body(_:)``, and one with an empty body.
    private static func save(_ count: Int, in database: Database) async throws {
        let collection = try database.defaultCollection()
        try await database.inBatch { batch in
            for number in 0..<count {
                try batch.save(
                    document: MutableDocument(id: "doc-\(String(format: "%03d", number))", data: Self.body(number)), in: collection)
            }
            try batch.save(document: MutableDocument(id: "empty", data: [:]), in: collection)
        }
    }

    private static let columns = """
        META().id AS id, name.first AS first, name.last, name, tags[0] AS t0, tags[-1] AS last_tag, tags[2].deep AS deep,
        tags[9] AS none, ratio, active, big, text, nowhere.x.y AS gone, name["first"] AS bracketed
        """

    private static func rows(_ query: Query) async throws -> [String] {
        try await query.execute().map { $0.toJSON() }
    }

    @Test func rowsEqualTheOwnedEvaluation() async throws {
        try await withDatabase { database, _ in
            let collection = try database.defaultCollection()
            try await Self.save(300, in: database)
            try await collection.createIndex(withName: "by-email", config: ValueIndexConfiguration(["email"]))
            try await collection.createIndex(withName: "by-rank", config: ValueIndexConfiguration(["rank"]))
            let conditions = [
                "WHERE email = $value", "WHERE email >= $value", "WHERE rank = $number", "WHERE rank >= $number",
                "WHERE rank >= $number AND active", "WHERE email = $value ORDER BY rank LIMIT 5",
                "WHERE rank >= $number ORDER BY rank LIMIT 7", "WHERE rank >= $number ORDER BY rank DESC LIMIT 9 OFFSET 2",
                "WHERE email >= $value ORDER BY email LIMIT 20", "WHERE rank IN [1, 3, $number]",
            ]
            var compared = 0
            for condition in conditions {
                // ORDER BY keys must be result columns for the rows to be projected in place.
                let extra = condition.contains("ORDER BY rank") ? ", rank" : condition.contains("ORDER BY email") ? ", email" : ""
                let inPlace = try database.createQuery("SELECT \(Self.columns)\(extra) FROM _ \(condition)")
                let owned = try database.createQuery("SELECT DISTINCT \(Self.columns)\(extra) FROM _ \(condition)")
                #expect(inPlace.plan.inPlace != nil, "\(condition)")
                #expect(owned.plan.inPlace == nil)
                for number in [0, 4, 16, 40] {
                    let parameters = Parameters().setString("person-\(number)@example.com", forName: "value").setInt(
                        number, forName: "number")
                    inPlace.parameters = parameters
                    owned.parameters = parameters
                    let expected = try await Self.rows(owned)
                    #expect(try await Self.rows(inPlace) == expected, "\(condition) with \(number)")
                    compared += expected.count
                }
            }
            #expect(compared > 1000)
        }
    }

    @Test func columnsThatAreNotPathsOfTheDocumentAreNotProjectedInPlace() async throws {
        try await withDatabase { database, _ in
            for text in [
                "SELECT META().id, rank + 1 FROM _ WHERE rank = 1",
                "SELECT META().sequence FROM _ WHERE rank = 1", "SELECT rank FROM _ WHERE rank > 1 ORDER BY email LIMIT 2",
                "SELECT name AS n, n.first FROM _ WHERE rank = 1", "SELECT tags[$i] FROM _ WHERE rank = 1",
                "SELECT COUNT(*) FROM _ WHERE rank = 1", "SELECT DISTINCT * FROM _",
                "SELECT * FROM _ AS a JOIN _ AS b ON META(a).id = META(b).id",
            ] {
                let query = try database.createQuery(text)
                #expect(query.plan.inPlace == nil, "\(text)")
            }
            for text in [
                "SELECT META(p).id, p.name.first FROM _ AS p WHERE p.rank = 1", "SELECT * FROM _ WHERE rank = 1",
                "SELECT _.* FROM _ WHERE rank = 1", "SELECT META().id, * AS data FROM _",
            ] {
                let query = try database.createQuery(text)
                #expect(query.plan.inPlace != nil, "\(text)")
            }
        }
    }

    /// Full scans project `*` in place too, over the copy of each body the scan makes: rows equal
    /// the owned evaluation's for empty bodies, tombstones, WHEREs the body precheck decides or
    /// leaves to the evaluators, and ORDER BY; design documents stay out either way.
    @Test func fullScansProjectTheWholeDocumentInPlace() async throws {
        try await withDatabase { database, _ in
            let collection = try database.defaultCollection()
            try await Self.save(120, in: database)
            try await collection.save(document: MutableDocument(id: "_design/app", data: ["rank": 3, "views": [:]]))
            for number in [7, 8] {
                let document = try #require(try await collection.document(id: "doc-\(String(format: "%03d", number))"))
                try await collection.delete(document: document)
            }
            let queries = [
                "SELECT META().id, * FROM _", "SELECT * FROM _", "SELECT _.*, META().id AS id FROM _",
                "SELECT META().id AS id, * AS data FROM _ WHERE rank = 3", "SELECT META().id, * FROM _ WHERE rank + 1 = 4",
                "SELECT META().id, *, rank FROM _ WHERE active ORDER BY rank DESC LIMIT 9 OFFSET 2",
                "SELECT META().id, * FROM _ WHERE META().deleted OR rank = 5", "SELECT META().id, * FROM _ LIMIT 3",
            ]
            var compared = 0
            for text in queries {
                let inPlace = try database.createQuery(text)
                // A WHERE makes an index scan, which walks the collection when no index serves it.
                #expect(inPlace.plan.inPlace != nil && (text.contains("WHERE") || inPlace.plan.mainScan is CollectionScan), "\(text)")
                let owned = try database.createQuery(text.replacingOccurrences(of: "SELECT ", with: "SELECT DISTINCT "))
                #expect(owned.plan.inPlace == nil)
                let expectedRows = Array(try await owned.execute())
                let rows = Array(try await inPlace.execute())
                let expected = expectedRows.map { $0.toJSON() }
                #expect(rows.map { $0.toJSON() } == expected, "\(text)")
                #expect(!expected.contains { $0.contains("views") }, "\(text)")
                for (row, expectedRow) in zip(rows, expectedRows) {
                    let dictionary = try ValueConversion.strict(row.toDictionary())
                    #expect(ReadOwnershipTests.same(dictionary, try ValueConversion.strict(expectedRow.toDictionary())), "\(text)")
                }
                compared += expected.count
            }
            #expect(compared > 300)
        }
    }

    @Test func projectedRowsOutliveRewritesAndTheClosedDatabase() async throws {
        let directory = try TemporaryDirectory()
        let database = try directory.open("in-place")
        let collection = try database.defaultCollection()
        try await database.inBatch { batch in
            for number in 0..<200 {
                try batch.save(
                    document: MutableDocument(id: "doc-\(String(format: "%03d", number))", data: Self.body(number)), in: collection)
            }
        }
        try await collection.createIndex(withName: "by-rank", config: ValueIndexConfiguration(["rank"]))
        let query = try database.createQuery("SELECT \(Self.columns), rank FROM _ WHERE rank >= $number ORDER BY rank LIMIT 30")
        #expect(query.plan.inPlace != nil)
        query.parameters = Parameters().setInt(3, forName: "number")
        let results = Array(try await query.execute())
        let expected = results.map { $0.toJSON() }
        #expect(results.count == 30)

        // Every page those rows were read from is freed and written again, then the map is gone.
        for round in 0..<10 {
            try await database.inBatch { batch in
                for number in 0..<200 {
                    try batch.save(
                        document: MutableDocument(
                            id: "doc-\(String(format: "%03d", number))",
                            data: ["round": round, "filler": String(repeating: "y", count: 300)]),
                        in: collection)
                }
            }
        }
        for number in 0..<100 { try await collection.purge(id: "doc-\(String(format: "%03d", number))") }
        try await database.close()  // unmaps the file

        #expect(results.map { $0.toJSON() } == expected)
        for result in results {
            let id = try #require(result.string(forKey: "id"))
            let number = try #require(Int(id.dropFirst(4)))
            #expect(result.int(forKey: "rank") == number % 17)
            if number % 5 != 0 {
                #expect(result.string(forKey: "first") == "Ann \(number)")
                #expect(result.dictionary(forKey: "name")?.string(forKey: "first") == "Ann \(number)")
            }
            if number % 4 != 0 && number % 6 != 0 {
                #expect(result.dictionary(forKey: "last_tag")?.count == 1)
                #expect(result.boolean(forKey: "deep") == (number % 2 == 0))
            }
            #expect(result.string(forKey: "text") == String(repeating: "é", count: number % 9))
        }
    }
}
