import Foundation
import Testing

@testable import Couchette

/// MISSING versus null, as Couchbase Lite (LiteCore) treats them: the conditional functions,
/// the IS tests, literals that hold a MISSING value, the array functions over missing, null and
/// mixed arrays, COUNT and rows whose columns are all MISSING.
@Suite(.tags(.sanitizeAddress)) struct SQLPPMissingNullTests {
    static let document = #"{"n":null,"one":1,"arr":[1,2],"mixed":[1,"x",true,null,2.5],"empty":[]}"#

    @Test func conditionalFunctions() async throws {
        try await withDatabase { db, _ in
            try await SQLPP.save(db, "d", Self.document)
            try await SQLPP.expect(
                db,
                [
                    ("IFMISSING(nope, 'x')", #""x""#), ("IFMISSING(n, 'x')", "null"), ("IFMISSING(nope, nada)", nil),
                    ("IFMISSING(nope, nada, 3)", "3"),
                    ("IFNULL(n, 'x')", #""x""#), ("IFNULL(nope, 'x')", nil), ("IFNULL(n, n)", "null"), ("IFNULL(one, 'x')", "1"),
                    ("IFMISSINGORNULL(nope, n, 'x')", #""x""#), ("IFMISSINGORNULL(nope, n)", "null"),
                    ("MISSINGIF(1, 1)", nil), ("MISSINGIF(one, 2)", "1"), ("MISSINGIF(n, 1)", "null"), ("MISSINGIF(nope, 1)", nil),
                    ("MISSINGIF(1, 1.0)", nil), ("MISSINGIF('1', 1)", #""1""#),
                    ("NULLIF(1, 1)", "null"), ("NULLIF(one, 2)", "1"), ("NULLIF(nope, 1)", nil), ("NULLIF(n, 1)", "null"),
                ])
        }
    }

    @Test func isNullMissingValuedOverAbsentAndNullProperties() async throws {
        try await withDatabase { db, _ in
            try await SQLPP.save(db, "d", Self.document)
            try await SQLPP.expect(
                db,
                [
                    ("nope IS MISSING", "true"), ("n IS MISSING", "false"), ("nope IS NOT MISSING", "false"), ("n IS NOT MISSING", "true"),
                    ("nope IS NULL", nil), ("n IS NULL", "true"), ("one IS NULL", "false"),
                    ("nope IS NOT NULL", nil), ("n IS NOT NULL", "false"), ("one IS NOT NULL", "true"),
                    ("nope IS VALUED", "false"), ("n IS VALUED", "false"), ("one IS VALUED", "true"),
                    ("nope IS NOT VALUED", "true"), ("n IS NOT VALUED", "true"), ("one IS NOT VALUED", "false"),
                    ("one NOT NULL", "true"), ("n NOT NULL", "false"), ("nope NOT MISSING", "false"),
                ])
            for (id, json) in [("a", #"{"x":null}"#), ("b", #"{"x":1}"#), ("c", #"{}"#)] { try await SQLPP.save(db, id, json) }
            let counts = [
                ("x IS NULL", ["a"]), ("x IS NOT NULL", ["b"]), ("x IS MISSING", ["c", "d"]),
                ("x IS NOT MISSING", ["a", "b"]), ("x IS VALUED", ["b"]), ("x IS NOT VALUED", ["a", "c", "d"]),
                ("x NOT NULL", ["b"]),
            ]
            for (condition, expected) in counts {
                #expect(try await SQLPP.ids(db, where: condition) == expected, "\(condition)")
            }
        }
    }

    @Test func literalsLeaveOutMissingValues() async throws {
        try await withDatabase { db, _ in
            try await SQLPP.save(db, "d", Self.document)
            try await SQLPP.expect(
                db,
                [
                    ("{'n': nosuchprop}", "{}"), ("{'a': one, 'n': nosuchprop, 'z': n}", #"{"a":1,"z":null}"#),
                    ("[1, nosuchprop, 2]", "[1,2]"), ("[nosuchprop]", "[]"), ("[n]", "[null]"),
                    ("ARRAY_OF(1, nosuchprop, n)", "[1,null]"),
                    ("TOARRAY(nosuchprop)", nil), ("TOARRAY(n)", "null"), ("TOARRAY(1)", "[1]"), ("TOARRAY(arr)", "[1,2]"),
                    ("TO_ARRAY('a')", #"["a"]"#),
                ])
        }
    }

    @Test func arrayFunctionsOverMissingNullAndMixedArrays() async throws {
        try await withDatabase { db, _ in
            try await SQLPP.save(db, "d", Self.document)
            try await SQLPP.expect(
                db,
                [
                    ("ARRAY_CONTAINS(nope, 1)", nil), ("ARRAY_CONTAINS(n, 1)", "null"), ("ARRAY_CONTAINS(arr, 2)", "true"),
                    ("ARRAY_CONTAINS(mixed, 'x')", "true"), ("ARRAY_CONTAINS(mixed, 2)", "false"),
                    ("ARRAY_AVG(nope)", nil), ("ARRAY_AVG(n)", "null"), ("ARRAY_AVG(arr)", "1.5"), ("ARRAY_AVG(empty)", "0"),
                    // Every element counts, read as a number: "x" and null as 0, true as 1.
                    ("ARRAY_AVG(mixed)", "0.9"), ("ARRAY_SUM(mixed)", "4.5"), ("ARRAY_SUM(arr)", "3"), ("ARRAY_SUM(nope)", nil),
                    ("ARRAY_SUM(n)", "null"), ("ARRAY_SUM(empty)", "0"),
                    ("ARRAY_MAX(mixed)", "2.5"), ("ARRAY_MIN(mixed)", "0"), ("ARRAY_MAX(['b', 'a'])", "0"), ("ARRAY_MAX(empty)", "null"),
                    ("ARRAY_MIN(nope)", nil), ("ARRAY_MAX(n)", "null"),
                    ("ARRAY_COUNT(mixed)", "4"), ("ARRAY_LENGTH(mixed)", "5"), ("ARRAY_COUNT(nope)", nil), ("ARRAY_LENGTH(n)", "null"),
                    ("ARRAY_IFNULL([null, nope, 3])", "3"),
                ])
        }
    }

    @Test func countAndArrayAggSkipOnlyMissing() async throws {
        try await withDatabase { db, _ in
            for (id, json) in [("1", #"{"v":1}"#), ("2", #"{"v":"a"}"#), ("3", #"{"v":null}"#), ("4", #"{}"#), ("5", #"{"v":[1]}"#)] {
                try await SQLPP.save(db, id, json)
            }
            let row = try #require(try await queryJSON(db, "SELECT COUNT(*) AS rows, COUNT(v) AS values, ARRAY_AGG(v) AS vs FROM _").first)
            #expect(row == #"{"rows":5,"values":4,"vs":[1,"a",null,[1]]}"#)
            #expect(try await queryJSON(db, "SELECT COUNT(v) AS n FROM _ WHERE v IS NULL") == [#"{"n":1}"#])
            #expect(try await queryJSON(db, "SELECT COUNT(v) AS n FROM _ WHERE v IS MISSING") == [#"{"n":0}"#])
        }
    }

    @Test func rowsWhoseColumnsAreAllMissingAreStillRows() async throws {
        try await withDatabase { db, _ in
            try await SQLPP.save(db, "a", #"{"x":1}"#)
            try await SQLPP.save(db, "b", #"{"y":2}"#)
            let results = try await db.createQuery("SELECT nope, nada.deeper FROM _ ORDER BY META().id").execute().allResults()
            #expect(results.count == 2)
            #expect(results.map { $0.toJSON() } == ["{}", "{}"])
            #expect(results.first?.keys == ["nope", "deeper"])
            #expect(results.first?.value(forKey: "nope") == nil)
            #expect(try await queryJSON(db, "SELECT x FROM _ ORDER BY META().id") == [#"{"x":1}"#, "{}"])
        }
    }
}
