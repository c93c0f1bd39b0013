import Foundation
import Testing

@testable import Couchette

/// Grammar details of Couchbase Lite's SQL++ and the names it gives result columns.
@Suite(.tags(.sanitizeAddress)) struct SQLPPGrammarTests {
    @Test func dollarSignsInsideIdentifiers() async throws {
        try await withDatabase { db, _ in
            try await SQLPP.save(db, "d", #"{"$Type":"a","Ty$pe":"b","Type$":"c","nested":{"$x":1}}"#)
            let query = try db.createQuery("SELECT `$Type`, Ty$pe, Type$, nested.`$x` FROM _")
            #expect(query.columnNames == ["$Type", "Ty$pe", "Type$", "$x"])
            #expect(try await query.execute().map { $0.toJSON() } == [#"{"$Type":"a","Ty$pe":"b","Type$":"c","$x":1}"#])
            #expect(try await SQLPP.ids(db, where: "Ty$pe = 'b' AND `$Type` = 'a'") == ["d"])
            // A leading `$` is still a parameter.
            let parameterized = try db.createQuery("SELECT Type$ FROM _ WHERE Ty$pe = $p")
            parameterized.parameters = Parameters().setString("b", forName: "p")
            #expect(try await parameterized.execute().allResults().count == 1)
        }
    }

    @Test func starWithABareAlias() async throws {
        try await withDatabase { db, _ in
            try await SQLPP.save(db, "d", #"{"x":1}"#)
            let query = try db.createQuery("SELECT * Star FROM _")
            #expect(query.columnNames == ["Star"])
            #expect(try await query.execute().map { $0.toJSON() } == [#"{"Star":{"x":1}}"#])
            #expect(try db.createQuery("SELECT * AS s, x FROM _").columnNames == ["s", "x"])
        }
    }

    @Test func functionsTakeAtMost128Arguments() async throws {
        try await withDatabase { db, _ in
            try await SQLPP.save(db, "d", #"{"x":1}"#)
            let arguments = (1...128).map { "'\($0 % 10)'" }
            #expect(try await SQLPP.value(db, "CONCAT(\(arguments.joined(separator: ", ")))")?.count == 130)
            let message = await expectCouchetteError(.invalidQuery) {
                _ = try db.createQuery("SELECT CONCAT(\((arguments + ["'x'"]).joined(separator: ", "))) FROM _")
            }
            #expect(message?.contains("more than 128 arguments") == true, "\(message ?? "")")
            await expectCouchetteError(.invalidQuery) {
                _ = try db.createQuery("SELECT ARRAY_OF(\(Array(repeating: "1", count: 129).joined(separator: ","))) FROM _")
            }
        }
    }

    @Test func columnNamesOfMixedSelects() async throws {
        try await withDatabase { db, _ in
            try await SQLPP.save(db, "d", #"{"name":"n","address":{"city":"c"},"tags":["t"]}"#)
            let cases: [(String, [String])] = [
                ("SELECT 1, name, 'x', name, UPPER(name) FROM _", ["$1", "name", "$2", "name #2", "$3"]),
                ("SELECT name, address.city, META().id, COUNT(*) FROM _", ["name", "city", "id", "$1"]),
                ("SELECT name AS `$1`, 2, 3 FROM _", ["$1", "$2", "$3"]),
                ("SELECT name, name, name FROM _", ["name", "name #2", "name #3"]),
                ("SELECT 1 AS a, name, 2 FROM _", ["a", "name", "$1"]),
                ("SELECT *, name, * FROM _", ["_", "name", "_ #2"]),
                ("SELECT city, address.city FROM _", ["city", "city #2"]),
            ]
            for (sql, expected) in cases {
                #expect(try db.createQuery(sql).columnNames == expected, "\(sql)")
            }
            let row = try #require(try await db.createQuery("SELECT 1, name, 'x', name FROM _").execute().allResults().first)
            #expect(row.toJSON() == #"{"$1":1,"name":"n","$2":"x","name #2":"n"}"#)
            // An alias that an earlier column's name already took is an error, as in Couchbase Lite.
            for sql in ["SELECT 1, 2 AS `$1` FROM _", "SELECT name, 1 AS name FROM _", "SELECT 1 AS a, 2 AS a FROM _"] {
                let message = await expectCouchetteError(.invalidQuery) { _ = try db.createQuery(sql) }
                #expect(message?.contains("duplicate column name") == true, "\(sql): \(message ?? "")")
            }
        }
    }

    @Test func malformedUsesOfTheNewGrammarAreQueryErrors() async throws {
        try await withDatabase { db, _ in
            for sql in [
                "SELECT a IS IS b FROM _", "SELECT a NOT FROM _", "SELECT $ FROM _", "SELECT * * FROM _",
                "SELECT * AS FROM _", "SELECT a IS NOT FROM _", "SELECT `$` IS $ FROM _", "SELECT 1 NOT NULL NOT NULL FROM _",
            ] {
                await expectCouchetteError(.invalidQuery) { _ = try db.createQuery(sql) }
            }
            let query = try db.createQuery("SELECT a$$, `$`, a$b$ FROM _")
            #expect(query.columnNames == ["a$$", "$", "a$b$"])
        }
    }
}
