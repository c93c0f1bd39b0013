import Foundation
import Testing

@testable import Couchette

/// Operators and literals, one row per case: `SELECT <expression> AS v` over one known document;
/// the expected column is JSON, or nil for MISSING (the column is then absent from `toJSON()`).
@Suite(.tags(.sanitizeAddress, .sanitizeAddress)) struct QueryExpressionTests {
    static let document = #"""
        {"i":7,"j":2,"d":2.5,"s":"Hello","n":null,"t":true,"f":false,"zero":0,"arr":[1,2,3],"empty":[],
         "obj":{"a":1,"b":{"c":"deep"},"list":[{"k":"x"},{"k":"y"}]},"emptyObj":{},"mixed":[3,null,"x"],
         "odd key":"spaced","pct":"100%","under":"a_b","path":"a\\b"}
        """#

    static let cases: [(String, String?)] = [
        // literals and paths
        ("1", "1"), ("-1", "-1"), ("1.5", "1.5"), ("'it''s'", #""it's""#), (#""dq""#, #""dq""#), ("'a\\nb'", #""a\\nb""#),
        ("TRUE", "true"), ("false", "false"), ("NULL", "null"), ("MISSING", nil),
        ("[1, 'a', null]", #"[1,"a",null]"#), ("{'a': 1, \"b\": [true]}", #"{"a":1,"b":[true]}"#), ("[]", "[]"), ("{}", "{}"),
        ("{'m': MISSING, 'k': 1}", #"{"k":1}"#),
        ("i", "7"), ("obj.b.c", #""deep""#), ("obj.list[1].k", #""y""#), ("arr[0]", "1"), ("arr[-1]", "3"), ("arr[3]", nil),
        ("arr[j]", "3"), ("obj['a']", "1"), ("`odd key`", #""spaced""#), ("nope", nil), ("s.x", nil), ("arr.x", nil),
        ("obj.b", #"{"c":"deep"}"#),
        // arithmetic: integer / integer divides integers; non-numbers give null; MISSING propagates
        ("i + j", "9"), ("i - j", "5"), ("i * j", "14"), ("i / j", "3"), ("i % j", "1"), ("d * 2", "5"), ("i / 2.0", "3.5"),
        ("-i", "-7"), ("-d", "-2.5"), ("i / 0", "null"), ("i % 0", "null"), ("1 + 2 * 3", "7"), ("(1 + 2) * 3", "9"),
        ("s + 1", "null"), ("n + 1", "null"), ("nope + 1", nil), ("9223372036854775807 + 1", "9.223372036854776e+18"),
        ("-7 / 2", "-3"), ("7.5 % 2", "1.5"),
        // concatenation
        ("s || ' world'", #""Hello world""#), ("s || i", #""Hello7""#), ("s || nope", nil), ("s || n", #""Hellonull""#),
        // comparisons: numbers compare numerically across int/double; null = null is true (Couchbase Lite)
        ("i = 7", "true"), ("i == 7.0", "true"), ("i != 7", "false"), ("i <> 8", "true"), ("i < 8", "true"), ("i <= 7", "true"),
        ("i > 7", "false"), ("i >= 7.5", "false"), ("s = 'Hello'", "true"), ("s = 'hello'", "false"), ("s < 'World'", "true"),
        ("'B' < 'a'", "true"), ("n = null", "true"), ("i = null", "false"), ("n < 1", "null"), ("nope = 1", nil), ("nope = nope", nil),
        ("i = '7'", "false"), ("t = true", "true"), ("arr = [1,2,3]", "true"), ("arr < [1,3]", "true"), ("obj.b = {'c':'deep'}", "true"),
        // N1QL type order across types: null < false < true < numbers < strings < arrays < objects
        ("false < true", "true"), ("true < 0", "true"), ("99 < ''", "true"), ("'zzz' < []", "true"), ("[9] < {}", "true"),
        // logic with three values
        ("t AND f", "false"), ("t OR f", "true"), ("NOT f", "true"), ("NOT t", "false"), ("NOT n", "null"), ("NOT nope", nil),
        ("f AND nope", "false"), ("nope AND f", "false"), ("t AND nope", nil), ("t AND n", "null"), ("n AND nope", nil),
        ("t OR nope", "true"), ("f OR nope", nil), ("f OR n", "null"), ("n OR nope", "null"), ("i AND s", "true"), ("zero OR f", "false"),
        // IS tests (N1QL's table)
        ("n IS NULL", "true"), ("i IS NULL", "false"), ("nope IS NULL", nil), ("n IS NOT NULL", "false"), ("i IS NOT NULL", "true"),
        ("nope IS MISSING", "true"), ("n IS MISSING", "false"), ("nope IS NOT MISSING", "false"), ("i IS NOT MISSING", "true"),
        ("i IS VALUED", "true"), ("n IS VALUED", "false"), ("nope IS VALUED", "false"), ("nope IS NOT VALUED", "true"),
        ("n IS NOT VALUED", "true"),
        // LIKE: case-sensitive, % and _, backslash escapes
        ("s LIKE 'He%'", "true"), ("s LIKE 'he%'", "false"), ("s LIKE 'H_llo'", "true"), ("s LIKE 'H_lo'", "false"), ("s LIKE '%'", "true"),
        ("s NOT LIKE '%z%'", "true"), ("pct LIKE '100\\%'", "true"), ("pct LIKE '10\\%'", "false"), ("under LIKE 'a\\_b'", "true"),
        ("'axb' LIKE 'a\\_b'", "false"), ("path LIKE 'a\\\\b'", "true"), ("i LIKE '7'", "null"), ("nope LIKE 'x'", nil),
        ("'' LIKE ''", "true"),
        ("s LIKE '%l%o'", "true"), ("s LIKE '%%%'", "true"),
        // IN
        ("i IN [1, 7]", "true"), ("i IN (1, 7)", "true"), ("i NOT IN [1, 2]", "true"), ("2 IN arr", "true"), ("4 IN arr", "false"),
        ("i IN s", "null"), ("nope IN arr", nil), ("'x' IN mixed", "true"), ("i IN empty", "false"), ("7.0 IN [7]", "true"),
        // BETWEEN
        ("i BETWEEN 1 AND 7", "true"), ("i BETWEEN 8 AND 9", "false"), ("i NOT BETWEEN 8 AND 9", "true"), ("s BETWEEN 'A' AND 'Z'", "true"),
        ("nope BETWEEN 1 AND 2", nil), ("n BETWEEN 1 AND 2", "null"),
        // CASE
        ("CASE WHEN i > 5 THEN 'big' ELSE 'small' END", #""big""#), ("CASE WHEN i > 9 THEN 'big' END", "null"),
        ("CASE i WHEN 1 THEN 'one' WHEN 7 THEN 'seven' END", #""seven""#), ("CASE nope WHEN 1 THEN 'one' ELSE 'other' END", #""other""#),
        ("CASE WHEN n THEN 1 WHEN nope THEN 2 ELSE MISSING END", nil), ("CASE WHEN 'x' THEN 1 END", "1"),
        // ANY / EVERY / ANY AND EVERY over arrays, objects (their values), empty and MISSING
        ("ANY x IN arr SATISFIES x > 2 END", "true"), ("ANY x IN arr SATISFIES x > 3 END", "false"),
        ("EVERY x IN arr SATISFIES x > 0 END", "true"),
        ("EVERY x IN arr SATISFIES x > 1 END", "false"), ("ANY AND EVERY x IN arr SATISFIES x > 0 END", "true"),
        ("ANY x IN empty SATISFIES true END", "false"), ("EVERY x IN empty SATISFIES false END", "true"),
        ("ANY AND EVERY x IN empty SATISFIES true END", "false"),
        ("ANY x IN nope SATISFIES true END", "false"), ("EVERY x IN nope SATISFIES false END", "true"),
        ("ANY x IN emptyObj SATISFIES true END", "false"),
        ("ANY v IN obj SATISFIES v = 1 END", "true"), ("EVERY v IN emptyObj SATISFIES false END", "true"),
        ("ANY e IN obj.list SATISFIES e.k = 'y' END", "true"), ("SOME e IN obj.list SATISFIES e.k = 'z' END", "false"),
        ("ANY a IN [[1,2],[3]] SATISFIES ANY b IN a SATISFIES b = 3 END END", "true"), ("ANY i IN arr SATISFIES i = 7 END", "false"),
        ("EXISTS arr", "true"), ("EXISTS empty", "false"), ("EXISTS nope", "false"),
        // COLLATE
        ("s = 'hello' COLLATE NOCASE", "true"), ("s COLLATE NOCASE = 'HELLO'", "true"), ("'Über' COLLATE NOCASE = 'über'", "false"),
        ("'Über' COLLATE (UNICODE NOCASE) = 'über'", "true"), ("'résumé' COLLATE NODIAC = 'resume'", "true"),
        ("'résumé' = 'resume'", "false"),
        ("'a' COLLATE UNICODE < 'B'", "true"), ("'a' < 'B'", "false"), ("'a' COLLATE UNICODE < 'A'", "true"),
        ("'Ä' COLLATE (UNICODE NODIAC NOCASE) = 'a'", "true"), ("s COLLATE NOCASE LIKE 'hel%'", "true"),
        ("'é' COLLATE UNICODE < 'f'", "true"),
        ("'é' < 'f'", "false"),
        // parameters are compiled like any value (set by the test)
        ("$p + 1", "42"),
    ]

    @Test(arguments: cases)
    func expression(_ expression: String, _ expected: String?) async throws {
        try await withDatabase { db, _ in
            try await db.defaultCollection().save(document: MutableDocument(id: "x", json: QueryExpressionTests.document))
            let query = try db.createQuery("SELECT \(expression) AS v FROM _")
            query.parameters = Parameters().setInt(41, forName: "p")
            let rows = try await query.execute().allResults()
            #expect(rows.count == 1)
            #expect(rows.first?.toJSON() == (expected.map { #"{"v":\#($0)}"# } ?? "{}"), "\(expression)")
        }
    }
}
