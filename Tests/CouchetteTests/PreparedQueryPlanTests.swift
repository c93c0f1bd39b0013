import Foundation
import Testing

@testable import Couchette

/// A prepared query keeps the index its last execution chose (``AccessPathCache``) only while the
/// collection's built indexes stay the same: after every index created, replaced or deleted
/// between two executions, its rows and explain() equal those of the same query compiled afresh.
@Suite struct PreparedQueryPlanTests {
    /// Twenty people with an e-mail, a birthday (two per year), and tags.
    private func withPeople(_ body: (Database, Collection) async throws -> Void) async throws {
        try await withDatabase { database, _ in
            let people = try await database.createCollection(name: "people")
            try await database.inBatch { batch in
                for number in 0..<20 {
                    let document = MutableDocument(id: String(format: "p%02d", number))
                        .setString("person\(number)@example.com", forKey: "email")
                        .setString(String(format: "%04d-01-01", 1980 + number / 2), forKey: "birthday")
                        .setValue(["t\(number % 3)"], forKey: "tags")
                    try batch.save(document: document, in: people)
                }
            }
            try await body(database, people)
        }
    }

    private func rows(_ query: Query) async throws -> [String] {
        try await query.execute().map { $0.string(at: 0) ?? "MISSING" }
    }

    /// Runs `prepared` with `parameters` and checks it against a query compiled now; returns its
    /// explain() text.
    @discardableResult
    private func check(_ prepared: Query, _ database: Database, _ parameters: Parameters) async throws -> String {
        prepared.parameters = parameters
        let fresh = try database.createQuery(prepared.text)
        fresh.parameters = parameters
        let (explained, expected) = (try await fresh.explain(), try await rows(fresh))
        #expect(try await rows(prepared) == expected)
        #expect(try await prepared.explain() == explained)
        return explained
    }

    @Test func aPointLookupFollowsTheIndexesCreatedAndDeletedBetweenExecutions() async throws {
        try await withPeople { database, people in
            let query = try database.createQuery("SELECT META().id FROM people WHERE email = $email")
            let email = { (number: Int) in Parameters().setString("person\(number)@example.com", forName: "email") }

            #expect(try await check(query, database, email(3)).hasPrefix("SCAN"))
            try await people.createIndex(withName: "by-email", config: ValueIndexConfiguration(["email"]))
            #expect(try await check(query, database, email(4)).contains("USING by-email"))
            #expect(try await rows(query) == ["p04"])
            #expect(try await check(query, database, email(5)).contains("USING by-email"))

            // Deleted: its entries are gone, so a kept choice would find nothing.
            try await people.deleteIndex(forName: "by-email")
            #expect(try await check(query, database, email(6)).hasPrefix("SCAN"))
            #expect(try await rows(query) == ["p06"])

            // The same name over another property: no use to this query.
            try await people.createIndex(withName: "by-email", config: ValueIndexConfiguration(["birthday"]))
            #expect(try await check(query, database, email(7)).hasPrefix("SCAN"))

            // Replaced by a definition over e-mail again, then a second index beside it.
            try await people.createIndex(withName: "by-email", config: ValueIndexConfiguration(["email"]))
            #expect(try await check(query, database, email(8)).contains("USING by-email"))
            try await people.createIndex(withName: "email-again", config: ValueIndexConfiguration(["email"]))
            try await check(query, database, email(9))
            try await people.deleteIndex(forName: "by-email")
            #expect(try await check(query, database, email(10)).contains("USING email-again"))
            #expect(try await rows(query) == ["p10"])
            // A value nothing has, and null.
            #expect(try await check(query, database, Parameters().setString("nobody", forName: "email")).contains("USING email-again"))
            #expect(try await rows(query).isEmpty)
            try await check(query, database, Parameters().setValue(NSNull(), forName: "email"))
        }
    }

    @Test func anOrderedRangeFollowsTheIndexesAndParameters() async throws {
        try await withPeople { database, people in
            let query = try database.createQuery("SELECT META().id FROM people WHERE birthday >= $from ORDER BY birthday LIMIT 3")
            let from = { (text: String) in Parameters().setString(text, forName: "from") }

            #expect(try await check(query, database, from("1985")).hasPrefix("SCAN"))
            try await people.createIndex(withName: "by-birthday", config: ValueIndexConfiguration(["birthday"]))
            #expect(try await check(query, database, from("1985")).contains("IN INDEX ORDER"))
            #expect(try await rows(query) == ["p10", "p11", "p12"])
            // null matches nothing: no range at all, and the next value walks the index again.
            #expect(try await check(query, database, Parameters().setValue(NSNull(), forName: "from")).hasPrefix("NO SCAN"))
            #expect(try await check(query, database, from("1988-06")).contains("IN INDEX ORDER"))
            #expect(try await rows(query) == ["p18", "p19"])

            // An index over birthday and e-mail is another set of indexes; deleting the first
            // leaves the composite one, which walks in the same order.
            try await people.createIndex(withName: "birthday-email", config: ValueIndexConfiguration(["birthday", "email"]))
            try await check(query, database, from("1981"))
            try await people.deleteIndex(forName: "by-birthday")
            #expect(try await check(query, database, from("1981")).contains("USING birthday-email"))
            #expect(try await rows(query) == ["p02", "p03", "p04"])
            try await people.deleteIndex(forName: "birthday-email")
            #expect(try await check(query, database, from("1981")).hasPrefix("SCAN"))
        }
    }

    @Test func anArrayIndexAndAQueryPlannedEachTimeStayRight() async throws {
        try await withPeople { database, people in
            // ANY over an array index: a single term on a member.
            let any = try database.createQuery("SELECT META().id FROM people WHERE ANY t IN tags SATISFIES t = $tag END")
            let tag = { (text: String) in Parameters().setString(text, forName: "tag") }
            try await check(any, database, tag("t1"))
            try await people.createIndex(withName: "by-tag", config: ArrayIndexConfiguration(path: "tags"))
            #expect(try await check(any, database, tag("t1")).contains("USING by-tag"))
            #expect(try await rows(any).count == 7)
            try await people.deleteIndex(forName: "by-tag")
            try await check(any, database, tag("t2"))

            // An equality with ORDER BY is planned at every execution (its values choose).
            let ordered = try database.createQuery("SELECT META().id FROM people WHERE birthday = $day ORDER BY email LIMIT 5")
            let day = { (text: String) in Parameters().setString(text, forName: "day") }
            try await check(ordered, database, day("1984-01-01"))
            try await people.createIndex(withName: "day-email", config: ValueIndexConfiguration(["birthday", "email"]))
            #expect(try await check(ordered, database, day("1984-01-01")).contains("USING day-email"))
            #expect(try await rows(ordered) == ["p08", "p09"])
            try await check(ordered, database, Parameters().setValue(NSNull(), forName: "day"))
            try await check(ordered, database, day("1985-01-01"))
        }
    }
}
