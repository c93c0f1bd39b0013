import Foundation
import Testing

@testable import Couchette

/// GROUP BY, HAVING, aggregates, DISTINCT, JOIN, UNNEST and column naming over the shared
/// fixtures; expected results are computed from the fixture files in Swift.
@Suite(.tags(.sanitizeAddress, .sanitizeAddress)) struct QueryClauseTests {
    private func withPeople(_ body: (Database, [[String: Any]]) async throws -> Void) async throws {
        try await withDatabase { db, _ in
            try await Fixtures.load("data/names_100.json", into: try db.defaultCollection(), in: db)
            try await body(db, try Fixtures.documents("data/names_100.json"))
        }
    }

    private static func state(_ person: [String: Any]) -> String? {
        ((person["contact"] as? [String: Any])?["address"] as? [String: Any])?["state"] as? String
    }

    @Test func groupByWithCountsAndHaving() async throws {
        try await withPeople { db, people in
            var counts: [String: Int] = [:]
            for person in people { if let state = Self.state(person) { counts[state, default: 0] += 1 } }
            let expected = counts.filter { $0.value >= 3 }.sorted { ($1.value, $0.key) < ($0.value, $1.key) }
                .map { "{\"state\":\"\($0.key)\",\"n\":\($0.value)}" }
            let rows = try await queryJSON(
                db,
                """
                SELECT contact.address.state, COUNT(*) AS n FROM _ GROUP BY contact.address.state
                HAVING COUNT(*) >= 3 ORDER BY n DESC, contact.address.state
                """)
            #expect(!expected.isEmpty)
            #expect(rows == expected)
        }
    }

    @Test func aggregatesWithoutGroupBy() async throws {
        try await withPeople { db, people in
            let likes = people.map { ($0["likes"] as? [Any])?.count ?? 0 }
            let row = try #require(
                try await db.createQuery(
                    """
                    SELECT COUNT(*), COUNT(likes), SUM(ARRAY_LENGTH(likes)) AS total, AVG(ARRAY_LENGTH(likes)) AS mean,
                           MIN(ARRAY_LENGTH(likes)) AS least, MAX(name.first) AS lastName, COUNT(DISTINCT gender) AS genders,
                           ARRAY_LENGTH(ARRAY_AGG(DISTINCT gender)) AS distinctGenders
                    FROM _
                    """
                ).execute().allResults().first)
            #expect(row.keys == ["$1", "$2", "total", "mean", "least", "lastName", "genders", "distinctGenders"])
            #expect(row.int(at: 0) == people.count && row.int(at: 1) == people.count)
            #expect(row.int(forKey: "total") == likes.reduce(0, +))
            #expect(abs(row.double(forKey: "mean") - Double(likes.reduce(0, +)) / Double(people.count)) < 1e-9)
            #expect(row.int(forKey: "least") == likes.min())
            let firstNames = people.compactMap { ($0["name"] as? [String: Any])?["first"] as? String }
            #expect(row.string(forKey: "lastName") == firstNames.max { Array($0.utf8).lexicographicallyPrecedes(Array($1.utf8)) })
            #expect(row.int(forKey: "genders") == Set(people.compactMap { $0["gender"] as? String }).count)
            #expect(row.int(forKey: "distinctGenders") == row.int(forKey: "genders"))
        }
    }

    @Test func aggregatesOverNoRowsGiveOneRow() async throws {
        try await withPeople { db, _ in
            let empty = try await queryJSON(db, "SELECT COUNT(*) AS n, SUM(x) AS s, AVG(x) AS a, MAX(x) AS m FROM _ WHERE gender = 'none'")
            #expect(empty == [#"{"n":0,"s":0,"a":null,"m":null}"#])
            let grouped = try await queryJSON(db, "SELECT gender, COUNT(*) FROM _ WHERE gender = 'none' GROUP BY gender")
            #expect(grouped.isEmpty)
        }
    }

    @Test func distinct() async throws {
        try await withPeople { db, people in
            let genders = Set(people.compactMap { $0["gender"] as? String }).sorted()
            #expect(try await queryJSON(db, "SELECT DISTINCT gender FROM _ ORDER BY gender") == genders.map { "{\"gender\":\"\($0)\"}" })
            let pairs = Set(people.compactMap { person in Self.state(person).map { "\($0)|\(person["gender"] as? String ?? "")" } })
            let rows = try await db.createQuery("SELECT DISTINCT contact.address.state, gender FROM _").execute().allResults()
            #expect(rows.count == pairs.count)
            #expect(try await queryJSON(db, "SELECT DISTINCT gender FROM _ ORDER BY gender LIMIT 1") == [#"{"gender":"\#(genders[0])"}"#])
        }
    }

    @Test func joinsOnTheJoinFixture() async throws {
        try await withDatabase { db, _ in
            let collection = try db.defaultCollection()
            try await Fixtures.load("data/join.json", into: collection, in: db)
            let documents = try Fixtures.documents("data/join.json")
            let employees = documents.filter { $0["type"] as? String == "employee" }
            let departments = documents.filter { $0["type"] as? String == "department" }
            let names = Dictionary(departments.map { ($0["code"] as! String, $0["name"] as! String) }, uniquingKeysWith: { a, _ in a })

            // INNER JOIN (hashed on the equality): employees whose department exists.
            let inner = employees.compactMap { employee -> String? in
                guard let department = names[employee["department"] as! String] else { return nil }
                return "\(employee["lastname"]!)|\(department)"
            }.sorted()
            let innerSQL = """
                SELECT e.lastname, d.name FROM _ AS e JOIN _ AS d ON e.department = d.code AND d.type = 'department'
                WHERE e.type = 'employee' ORDER BY e.lastname, d.name
                """
            let innerRows = try await db.createQuery(innerSQL).execute().map { "\($0.string(at: 0)!)|\($0.string(at: 1)!)" }
            #expect(!inner.isEmpty && innerRows == inner)
            #expect(try await db.createQuery(innerSQL).explain().contains("(hash)"))

            // LEFT OUTER JOIN keeps employees without a department, with a MISSING column.
            let left = try await db.createQuery(
                """
                SELECT e.lastname, d.name FROM _ e LEFT OUTER JOIN _ d ON d.code = e.department AND d.type = 'department'
                WHERE e.type = 'employee' ORDER BY e.lastname
                """
            ).execute().allResults()
            #expect(left.count == employees.count)
            let orphans = left.filter { $0.value(forKey: "name") == nil }.map { $0.string(forKey: "lastname")! }
            #expect(orphans == employees.filter { names[$0["department"] as! String] == nil }.map { $0["lastname"] as! String }.sorted())
            #expect(!orphans.isEmpty)

            // A non-equality ON runs as a nested loop and gives the same rows as the equivalent WHERE.
            let nested = try await db.createQuery(
                """
                SELECT e.lastname, d.name FROM _ AS e JOIN _ AS d ON d.type = 'department' AND d.code >= e.department AND d.code <= e.department
                WHERE e.type = 'employee' ORDER BY e.lastname, d.name
                """
            ).execute().map { "\($0.string(at: 0)!)|\($0.string(at: 1)!)" }
            #expect(nested == inner)

            // CROSS JOIN: every pair.
            let cross = try await db.createQuery(
                """
                SELECT COUNT(*) AS n FROM _ a CROSS JOIN _ b WHERE a.type = 'location' AND b.type = 'department'
                """
            ).execute().allResults()
            #expect(cross.first?.int(forKey: "n") == 2 * departments.count)

            // SELECT * with a join: one column per source.
            let star = try await db.createQuery(
                """
                SELECT * FROM _ AS e JOIN _ AS l ON l.code = e.location AND l.type = 'location' WHERE e.lastname = 'Smith'
                """
            ).execute().allResults()
            #expect(star.first?.keys == ["e", "l"])
            #expect(star.first?.dictionary(forKey: "l")?.string(forKey: "name") == "HQ")
        }
    }

    @Test func joinsAcrossCollections() async throws {
        try await withDatabase { db, _ in
            let people = try await db.createCollection(name: "people")
            let states = try await db.createCollection(name: "states", scope: "geo")
            try await Fixtures.load("data/names_100.json", into: people, in: db)
            try await Fixtures.load("data/states_titlecase.json", into: states, in: db)
            let abbreviations = Dictionary(
                try Fixtures.documents("data/states_titlecase.json").map {
                    ($0["abbreviation"] as! String, $0["name"] as! String)
                }, uniquingKeysWith: { a, _ in a })
            let expected = try Fixtures.documents("data/names_100.json").compactMap { person in
                Self.state(person).flatMap { abbreviations[$0] }
            }.count
            let rows = try await db.createQuery(
                """
                SELECT p.name.first, s.name AS state FROM people p JOIN geo.states s ON s.abbreviation = p.contact.address.state
                """
            ).execute().allResults()
            #expect(rows.count == expected && expected > 0)
            #expect(rows.allSatisfy { $0.string(forKey: "state") != nil })
        }
    }

    @Test func unnest() async throws {
        try await withDatabase { db, _ in
            try await Fixtures.load("data/nested.json", into: try db.defaultCollection(), in: db)
            let documents = try Fixtures.documents("data/nested.json")
            let shapes = documents.flatMap { ($0["shapes"] as? [[String: Any]]) ?? [] }
            let big = shapes.filter { ($0["size"] as! Int) > 2 }.map { $0["color"] as! String }.sorted()
            let rows = try await queryJSON(db, "SELECT s.color FROM _ AS doc UNNEST doc.shapes AS s WHERE s.size > 2 ORDER BY s.color")
            #expect(rows == big.map { "{\"color\":\"\($0)\"}" })
            let counts = try await queryJSON(db, "SELECT COUNT(*) AS n, SUM(s.size) AS total FROM _ AS doc UNNEST doc.shapes AS s")
            #expect(counts == ["{\"n\":\(shapes.count),\"total\":\(shapes.map { $0["size"] as! Int }.reduce(0, +))}"])
        }
    }

    @Test func quantifiersOverTheCorpus() async throws {
        try await withDatabase { db, _ in
            try await Fixtures.load("data/paths.json", into: try db.defaultCollection(), in: db)
            let documents = try Fixtures.documents("data/paths.json")
            func ids(_ predicate: ([String]) -> Bool) -> [String] {
                documents.enumerated().filter { predicate((($0.element["paths"] as? [[String: String]]) ?? []).map { $0["city"]! }) }
                    .map { String(format: "{\"id\":\"doc-%03d\"}", $0.offset + 1) }
            }
            #expect(
                try await queryJSON(db, "SELECT meta().id FROM _ WHERE ANY p IN paths SATISFIES p.city = 'San Francisco' END")
                    == ids { $0.contains("San Francisco") })
            #expect(
                try await queryJSON(db, "SELECT meta().id FROM _ WHERE EVERY p IN paths SATISFIES p.city LIKE 'San%' END")
                    == ids { $0.allSatisfy { $0.hasPrefix("San") } })
            #expect(
                try await queryJSON(db, "SELECT meta().id FROM _ WHERE NOT ANY p IN paths SATISFIES p.city = 'Palo Alto' END")
                    == ids { !$0.contains("Palo Alto") })
        }
    }

    @Test func columnNames() async throws {
        try await withDatabase("app") { db, _ in
            try await db.defaultCollection().save(document: MutableDocument(id: "a", json: #"{"name":{"first":"A"},"n":1,"first":"x"}"#))
            let cases: [(String, [String])] = [
                (
                    "SELECT name.first, first, n + 1, n * 2, meta().id, meta().sequence, name FROM _",
                    ["first", "first #2", "$1", "$2", "id", "sequence", "name"]
                ),
                ("SELECT n AS x, n, n FROM _", ["x", "n", "n #2"]),
                ("SELECT *, n FROM app", ["app", "n"]),
                ("SELECT d.*, d.n FROM _default d", ["d", "n"]),
                ("SELECT name.first AS `$1`, n + 1 FROM _", ["$1", "$2"]),
                ("SELECT name[0], COUNT(*) FROM _", ["name", "$1"]),
            ]
            for (sql, names) in cases {
                let query = try db.createQuery(sql)
                #expect(query.columnNames == names, "\(sql)")
                #expect(try await query.execute().allResults().first?.keys == names, "\(sql)")
            }
            let message = await expectCouchetteError(.invalidQuery) { _ = try db.createQuery("SELECT n AS x, first AS x FROM _") }
            #expect(message?.contains("duplicate column name 'x'") == true)
        }
    }

    @Test func orderByFollowsTypeOrderAndCollations() async throws {
        try await withDatabase { db, _ in
            let values = [
                #"{"v":"b"}"#, #"{"v":"B"}"#, #"{"v":"a"}"#, #"{"v":"é"}"#, #"{"v":"e"}"#, #"{"v":2}"#, #"{"v":1.5}"#,
                #"{"v":null}"#, #"{}"#, #"{"v":true}"#, #"{"v":false}"#, #"{"v":[1]}"#, #"{"v":{"k":1}}"#, #"{"v":"A"}"#,
            ]
            let collection = try db.defaultCollection()
            for (index, json) in values.enumerated() {
                try await collection.save(document: MutableDocument(id: String(format: "d%02d", index), json: json))
            }
            func order(_ clause: String) async throws -> [String] {
                try await db.createQuery("SELECT v FROM _ ORDER BY \(clause), meta().id").execute().map { row in
                    row.value(at: 0) == nil ? "MISSING" : JSON.string(from: row.values[0]!.value)
                }
            }
            #expect(
                try await order("v") == [
                    "MISSING", "null", "false", "true", "1.5", "2", #""A""#, #""B""#, #""a""#, #""b""#, #""e""#, #""é""#, "[1]",
                    #"{"k":1}"#,
                ])
            #expect(try await order("v DESC").first == #"{"k":1}"#)
            #expect(
                try await order("v COLLATE NOCASE").filter { $0.hasPrefix("\"") } == [#""a""#, #""A""#, #""b""#, #""B""#, #""e""#, #""é""#])
            #expect(
                try await order("v COLLATE UNICODE").filter { $0.hasPrefix("\"") } == [
                    #""a""#, #""A""#, #""b""#, #""B""#, #""e""#, #""é""#,
                ])
            // Equal under the collation: ties keep meta().id order (b d00, B d01, a d02, é d03, e d04, A d13).
            #expect(
                try await order("v COLLATE (UNICODE NODIAC NOCASE)").filter { $0.hasPrefix("\"") } == [
                    #""a""#, #""A""#, #""b""#, #""B""#, #""é""#, #""e""#,
                ])
        }
    }

    @Test func resultAliasesInOtherClauses() async throws {
        try await withPeople { db, people in
            let firsts = people.compactMap { ($0["name"] as? [String: Any])?["first"] as? String }
            let expected = firsts.filter { $0.hasPrefix("M") }.map { $0.uppercased() }
                .sorted { Array($0.utf8).lexicographicallyPrecedes(Array($1.utf8)) }.reversed()
            let rows = try await db.createQuery(
                """
                SELECT UPPER(name.first) AS shout FROM _ WHERE shout LIKE 'M%' ORDER BY shout DESC, meta().id
                """
            ).execute().map { $0.string(at: 0) ?? "" }
            #expect(!expected.isEmpty)
            #expect(rows == Array(expected))
            // A result expression may use another result's alias, but not its own (LiteCore's rule).
            #expect(try await queryJSON(db, "SELECT 1 AS one, one + 1 AS two FROM _ LIMIT 1") == [#"{"one":1,"two":2}"#])
            #expect(
                try await queryJSON(db, "SELECT gender || '!' AS gender FROM _ LIMIT 1") == [#"{"gender":"\#(people[0]["gender"]!)!"}"#])
        }
    }
}
