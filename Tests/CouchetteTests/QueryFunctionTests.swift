import Foundation
import Testing

@testable import Couchette

/// The scalar function library, one row per case: `SELECT <call> AS v` over one known document;
/// the expected column is JSON, or nil for MISSING.
@Suite(.tags(.sanitizeAddress, .sanitizeAddress)) struct QueryFunctionTests {
    static let document = #"""
        {"i":-7,"d":2.5,"s":"  Hello World  ","n":null,"arr":[3,1,null,2],"nums":[1,2.5,"x"],"empty":[],"obj":{"a":1},
         "strs":["b","a"],"date":"2018-10-23T11:33:01-0700","millis":1540319581000}
        """#

    static let cases: [(String, String?)] = [
        // math
        ("ABS(i)", "7"), ("ABS(-2.5)", "2.5"), ("ABS('x')", "null"), ("ABS(nope)", nil), ("ABS(n)", "null"),
        ("CEIL(2.1)", "3"), ("FLOOR(-2.1)", "-3"), ("ROUND(2.5)", "3"), ("ROUND(-2.5)", "-3"), ("ROUND(2.345, 2)", "2.35"),
        ("ROUND_EVEN(2.5)", "2"), ("ROUND_EVEN(3.5)", "4"), ("TRUNC(2.789, 1)", "2.7"), ("TRUNC(-2.7)", "-2"), ("ROUND(i)", "-7"),
        ("SIGN(i)", "-1"), ("SIGN(0)", "0"), ("SIGN(d)", "1"), ("SQRT(16)", "4"), ("SQRT(-1)", "null"), ("POWER(2, 10)", "1024"),
        ("EXP(0)", "1"), ("LN(1)", "0"), ("LOG(1000)", "3"), ("DEGREES(PI())", "180"), ("RADIANS(180) = PI()", "true"),
        ("ROUND(E(), 3)", "2.718"), ("ROUND(SIN(PI() / 2), 6)", "1"), ("COS(0)", "1"), ("TAN(0)", "0"), ("ASIN(1) = PI() / 2", "true"),
        ("ACOS(1)", "0"), ("ATAN(0)", "0"), ("ATAN2(1, 1) = PI() / 4", "true"), ("DIV(7, 2)", "3.5"), ("IDIV(7, 2)", "3"),
        ("IDIV(-7, 2)", "-3"), ("DIV(1, 0)", "null"), ("IDIV(1, 0)", "null"),
        // strings
        ("LOWER(s)", #""  hello world  ""#), ("UPPER('abc')", #""ABC""#), ("LENGTH('héllo')", "5"), ("LENGTH(i)", "null"),
        ("TRIM(s)", #""Hello World""#), ("LTRIM(s)", #""Hello World  ""#), ("RTRIM(s)", #""  Hello World""#),
        ("TRIM('xxaxx', 'x')", #""a""#),
        ("CONTAINS(s, 'World')", "true"), ("CONTAINS(s, 'world')", "false"), ("CONTAINS(nope, 'a')", nil),
        ("CONCAT('a', 'b', 'c')", #""abc""#), ("CONCAT('a', i)", #""a-7""#), ("lower('MiXeD')", #""mixed""#),
        // conditionals
        ("IFMISSING(nope, 'x')", #""x""#), ("IFMISSING(n, 'x')", "null"), ("IFMISSING(nope, nope)", nil),
        ("IFNULL(n, 'x')", #""x""#), ("IFNULL(nope, 'x')", nil), ("IFNULL(n, n)", "null"),
        ("IFMISSINGORNULL(nope, n, 3)", "3"), ("IFMISSINGORNULL(nope, n)", "null"),
        ("MISSINGIF(1, 1)", nil), ("MISSINGIF(1, 2)", "1"), ("NULLIF(1, 1)", "null"), ("NULLIF('a', 'b')", #""a""#),
        ("NULLIF(nope, 1)", nil),
        ("GREATEST(1, 3, 2)", "3"), ("LEAST(1, 3, 2)", "1"), ("GREATEST(1, 'a')", #""a""#), ("GREATEST(1, n)", "null"),
        ("LEAST(1, nope)", nil),
        // arrays
        ("ARRAY_LENGTH(arr)", "4"), ("ARRAY_COUNT(arr)", "3"), ("ARRAY_SUM(arr)", "6"), ("ARRAY_SUM(nums)", "3.5"),
        ("ARRAY_AVG(arr)", "1.5"),
        ("ARRAY_MAX(arr)", "3"), ("ARRAY_MIN(arr)", "0"), ("ARRAY_MAX(strs)", "0"), ("ARRAY_CONTAINS(arr, 2)", "true"),
        ("ARRAY_CONTAINS(arr, 5)", "false"), ("ARRAY_CONTAINS(arr, 2.0)", "true"), ("ARRAY_IFNULL([null, 5])", "5"),
        ("ARRAY_IFNULL([null])", "null"),
        ("ARRAY_OF(1, 'a')", #"[1,"a"]"#), ("ARRAY_OF()", "[]"), ("ARRAY_LENGTH(empty)", "0"), ("ARRAY_SUM(empty)", "0"),
        ("ARRAY_AVG(empty)", "0"),
        ("ARRAY_MAX(empty)", "null"), ("ARRAY_LENGTH(s)", "null"), ("ARRAY_LENGTH(nope)", nil),
        ("ARRAY_DISTINCT([1, 1.0, 'a', 'a'])", #"[1,"a"]"#),
        // types
        ("ISARRAY(arr)", "true"), ("IS_ARRAY(obj)", "false"), ("ISOBJECT(obj)", "true"), ("ISSTRING(s)", "true"), ("ISNUMBER(d)", "true"),
        ("ISBOOLEAN(true)", "true"), ("ISATOM(1)", "true"), ("ISATOM(arr)", "false"), ("IS_STRING(nope)", nil), ("ISNUMBER(n)", "null"),
        ("TYPE(arr)", #""array""#), ("TYPE(obj)", #""object""#), ("TYPE(n)", "null"), ("TYPE(nope)", nil), ("TYPE(i)", #""number""#),
        ("TYPE(true)", #""boolean""#), ("TYPE(s)", #""string""#),
        ("TOARRAY(1)", "[1]"), ("TOARRAY(arr)", "[3,1,null,2]"), ("TOATOM([5])", "5"), ("TOATOM({'a': 'x'})", #""x""#),
        ("TOATOM([1, 2])", "null"),
        ("TOBOOLEAN(0)", "false"), ("TOBOOLEAN('')", "false"), ("TOBOOLEAN('a')", "true"), ("TOBOOLEAN(empty)", "false"),
        ("TOBOOLEAN(arr)", "true"),
        ("TONUMBER('42')", "42"), ("TONUMBER(' 4.5 ')", "4.5"), ("TONUMBER('x')", "null"), ("TONUMBER(true)", "1"),
        ("TO_NUMBER(arr)", "null"),
        ("TOOBJECT(obj)", #"{"a":1}"#), ("TOOBJECT(1)", "{}"), ("TOSTRING(12)", #""12""#), ("TOSTRING(2.5)", #""2.5""#),
        ("TOSTRING(false)", #""false""#),
        ("TOSTRING(arr)", "null"), ("TO_STRING(nope)", nil),
        // regular expressions
        ("REGEXP_CONTAINS(s, 'W.rld')", "true"), ("REGEXP_CONTAINS(s, '^W')", "false"), ("REGEXP_LIKE('abc', 'a.c')", "true"),
        ("REGEXP_LIKE('abcd', 'a.c')", "false"),
        ("REGEXP_LIKE('ab', 'a|ab')", "true"), ("REGEXP_LIKE('ab\n', 'ab')", "false"), ("REGEXP_LIKE('xab', 'ab|b')", "false"),
        ("REGEXP_POSITION(s, 'o')", "6"), ("REGEXP_POSITION(s, 'z')", "-1"),
        ("REGEXP_REPLACE('a1b22', '[0-9]+', '#')", #""a#b#""#), ("REGEXP_REPLACE('a1b22', '[0-9]', '#', 2)", #""a#b#2""#),
        // dates (UTC, numeric time zones in minutes as in LiteCore, and IANA names; offsets written ±hhmm,
        // differences and month additions counted the N1QL way: see SQLPPDateFunctionTests)
        ("STR_TO_MILLIS(date)", "1540319581000"), ("STR_TO_MILLIS('1970-01-01T00:00:00.123+0000')", "123"), ("STR_TO_MILLIS('x')", "null"),
        ("STR_TO_MILLIS('2018-12-32T01:01:01Z')", "null"), ("STR_TO_UTC(date)", #""2018-10-23T18:33:01Z""#),
        ("STR_TO_UTC('2018-10-23T11:33:01+03:30')", #""2018-10-23T08:03:01Z""#),
        ("STR_TO_UTC('2018-10-23T11:33:01.123-0700')", #""2018-10-23T18:33:01.123Z""#),
        ("STR_TO_UTC('1970-01-01T00:00:00.000000+0000')", #""1970-01-01T00:00:00Z""#), ("STR_TO_UTC('')", "null"),
        ("MILLIS_TO_UTC(millis)", #""2018-10-23T18:33:01Z""#), ("MILLIS_TO_UTC(1540319581999)", #""2018-10-23T18:33:01.999Z""#),
        ("MILLIS_TO_UTC(0, '1111-11-11')", #""1970-01-01""#), ("MILLIS_TO_UTC(millis, '11:11:11')", #""18:33:01""#),
        ("MILLIS_TO_UTC(millis, '11:11:11Z')", #""18:33:01Z""#),
        ("MILLIS_TO_UTC(millis, '1111-11-11 11:11:11.111')", #""2018-10-23 18:33:01""#),
        ("MILLIS_TO_TZ(millis, -420)", #""2018-10-23T11:33:01-0700""#), ("MILLIS_TO_TZ(millis, 330, '1111-11-11')", #""2018-10-24""#),
        ("MILLIS_TO_TZ(millis, 'Asia/Tokyo')", #""2018-10-24T03:33:01+0900""#), ("MILLIS_TO_TZ(millis, 'Nowhere/City')", "null"),
        ("STR_TO_TZ(date, 60)", #""2018-10-23T19:33:01+0100""#), ("STR_TO_TZ(date, 'America/New_York')", #""2018-10-23T14:33:01-0400""#),
        ("STR_TO_MILLIS(MILLIS_TO_STR(millis))", "1540319581000"),
        ("DATE_DIFF_STR('2018-10-25T00:00:00Z', '2018-10-23T12:00:00Z', 'day')", "2"),
        ("DATE_DIFF_STR('2018-10-23T00:00:00Z', '2018-10-23T12:00:00Z', 'hour')", "-12"),
        ("DATE_DIFF_STR('2019-01-01T00:00:00Z', '2018-10-31T00:00:00Z', 'month')", "3"),
        ("DATE_DIFF_STR('2020-06-01', '2018-10-31', 'year')", "2"), ("DATE_DIFF_STR('2020-06-01', '2018-10-31', 'quarter')", "6"),
        ("DATE_DIFF_STR('2001-01-01', '1999-12-31', 'century')", "0"),
        ("DATE_DIFF_MILLIS(10000, 1000, 'second')", "9"), ("DATE_DIFF_MILLIS(1000, 10000, 'millisecond')", "-9000"),
        ("DATE_DIFF_STR('x', date, 'day')", "null"),
        ("DATE_ADD_STR('2018-01-31T00:00:00Z', 1, 'month')", #""2018-03-03T00:00:00Z""#),
        ("DATE_ADD_STR(date, 2, 'hours')", #""2018-10-23T13:33:01-0700""#),
        ("DATE_ADD_STR('2018-10-23', 1, 'week', '1111-11-11')", #""2018-10-30""#), ("DATE_ADD_MILLIS(0, 3, 'day')", "259200000"),
        ("DATE_ADD_MILLIS(0, 1, 'year')", "31536000000"), ("DATE_ADD_MILLIS(0, 1, 'fortnight')", "null"),
    ]

    @Test(arguments: cases)
    func function(_ call: String, _ expected: String?) async throws {
        try await withDatabase { db, _ in
            try await db.defaultCollection().save(document: MutableDocument(id: "x", json: QueryFunctionTests.document))
            let rows = try await db.createQuery("SELECT \(call) AS v FROM _").execute().allResults()
            #expect(rows.first?.toJSON() == (expected.map { #"{"v":\#($0)}"# } ?? "{}"), "\(call)")
        }
    }

    @Test func functionErrorsAreCaughtAtCreateQuery() async throws {
        try await withDatabase { db, _ in
            for (sql, fragment) in [
                ("SELECT NOPE(1) FROM _", "unknown function NOPE() at offset 7"),
                ("SELECT ABS(1, 2) FROM _", "ABS() takes 1 arguments, got 2"),
                ("SELECT CONCAT('a') FROM _", "CONCAT() takes at least 2 arguments, got 1"),
                ("SELECT ABS(*) FROM _", "only allowed for aggregates"),
                ("SELECT SUM(*) FROM _", "SUM(*) is not allowed"),
                ("SELECT 1 FROM _ WHERE COUNT(*) > 1", "aggregate COUNT() is not allowed in WHERE"),
                ("SELECT SUM(COUNT(*)) FROM _", "not allowed in the argument of SUM()"),
                ("SELECT 1 FROM _ GROUP BY MAX(x)", "not allowed in GROUP BY"),
                ("SELECT x FROM _ HAVING x > 1", "HAVING requires GROUP BY"),
            ] {
                let message = await expectCouchetteError(.invalidQuery) { _ = try db.createQuery(sql) }
                #expect(message?.contains(fragment) == true, "\(sql): \(message ?? "nil")")
            }
            let regex = try db.createQuery("SELECT REGEXP_LIKE('a', '(') FROM _")
            try await db.defaultCollection().save(document: MutableDocument(id: "x"))
            await expectCouchetteError(.invalidQuery) { _ = try await regex.execute() }
        }
    }
}
