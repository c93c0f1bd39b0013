import Foundation
import Testing

@testable import Couchette

/// `IS` and `IS NOT` between any two values: null-safe equality that is always true or false
/// (MISSING IS MISSING, null IS null), as SQLite's IS is in Couchbase Lite.
@Suite(.tags(.sanitizeAddress)) struct SQLPPIsOperatorTests {
    private func withAirlines(_ body: (Database) async throws -> Void) async throws {
        try await withDatabase { db, _ in
            try await SQLPP.save(db, "airline_1", #"{"type":"airline","callsign":"ANA","num":1}"#)
            try await SQLPP.save(db, "airline_2", #"{"type":"airline","callsign":"AAL","num":2.0}"#)
            try await SQLPP.save(db, "airline_3", #"{"type":"airline","name":"no callsign","num":"3"}"#)
            try await SQLPP.save(db, "airline_4", #"{"type":"airline","callsign":null,"num":[4]}"#)
            try await body(db)
        }
    }

    @Test func isComparesAnyValue() async throws {
        try await withAirlines { (db: Database) async throws in
            #expect(try await SQLPP.ids(db, where: "callsign IS 'ANA'") == ["airline_1"])
            #expect(try await SQLPP.ids(db, where: "callsign IS NOT 'ANA'") == ["airline_2", "airline_3", "airline_4"])
            #expect(
                try await SQLPP.ids(
                    db, where: "type = 'airline' AND callsign IS $sign",
                    parameters: Parameters().setString("AAL", forName: "sign")) == ["airline_2"])
            // Numbers compare by value, other types never equal a number.
            #expect(try await SQLPP.ids(db, where: "num IS 2") == ["airline_2"])
            #expect(try await SQLPP.ids(db, where: "num IS 1.0") == ["airline_1"])
            #expect(try await SQLPP.ids(db, where: "num IS '3'") == ["airline_3"])
            #expect(try await SQLPP.ids(db, where: "num IS [4]") == ["airline_4"])
        }
    }

    @Test func isIsNullSafe() async throws {
        try await withAirlines { (db: Database) async throws in
            // MISSING IS MISSING and null IS null: every document matches itself.
            #expect(try await SQLPP.ids(db, where: "callsign IS callsign").count == 4)
            #expect(try await SQLPP.ids(db, where: "callsign IS NOT callsign").isEmpty)
            #expect(try await SQLPP.ids(db, where: "callsign IS nosuchprop") == ["airline_3"])
            #expect(try await SQLPP.ids(db, where: "callsign IS NOT nosuchprop") == ["airline_1", "airline_2", "airline_4"])
            // IS NULL keeps its own meaning (MISSING is not null); IS MISSING its own.
            #expect(try await SQLPP.ids(db, where: "callsign IS NULL") == ["airline_4"])
            #expect(try await SQLPP.ids(db, where: "callsign IS NOT NULL") == ["airline_1", "airline_2"])
            #expect(try await SQLPP.ids(db, where: "callsign IS MISSING") == ["airline_3"])
            let results = try await queryJSON(
                db,
                """
                SELECT callsign IS 'ANA' AS a, callsign IS NOT 'ANA' AS b, nope IS nada AS c FROM _ ORDER BY META().id
                """)
            #expect(
                results == [
                    #"{"a":true,"b":false,"c":true}"#, #"{"a":false,"b":true,"c":true}"#,
                    #"{"a":false,"b":true,"c":true}"#, #"{"a":false,"b":true,"c":true}"#,
                ])
        }
    }

    @Test func isBindsLikeTheComparisons() async throws {
        try await withAirlines { (db: Database) async throws in
            #expect(try await SQLPP.ids(db, where: "callsign IS 'AN' || 'A' AND type IS 'airline'") == ["airline_1"])
            #expect(try await SQLPP.ids(db, where: "NOT callsign IS 'ANA' AND callsign IS VALUED") == ["airline_2"])
            await expectCouchetteError(.invalidQuery) { _ = try db.createQuery("SELECT 1 FROM _ WHERE callsign IS") }
        }
    }

    @Test func isWithAValueUsesAnIndexLikeEquality() async throws {
        try await withAirlines { (db: Database) async throws in
            try await db.defaultCollection().createIndex(withName: "byCallsign", config: ValueIndexConfiguration(["callsign"]))
            let query = try db.createQuery("SELECT META().id AS id FROM _ WHERE callsign IS 'ANA'")
            #expect(try await query.explain().contains("byCallsign"))
            #expect(try await query.execute().compactMap { $0.string(forKey: "id") } == ["airline_1"])
            // IS NULL and IS MISSING keep their own tests; IS NOT is not an index range.
            #expect(try await SQLPP.ids(db, where: "callsign IS NOT 'ANA'") == ["airline_2", "airline_3", "airline_4"])
            #expect(try await SQLPP.ids(db, where: "callsign IS MISSING") == ["airline_3"])
        }
    }
}
