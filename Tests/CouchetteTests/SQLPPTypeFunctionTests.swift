import Foundation
import Testing

@testable import Couchette

/// The type tests and conversions for every kind of input (Couchbase Lite's results: MISSING and
/// null pass through every one of them), and CONCAT's conversions.
@Suite(.tags(.sanitizeAddress)) struct SQLPPTypeFunctionTests {
    static let document = #"""
        {"n":null,"t":true,"f":false,"zero":0,"i":7,"d":2.5,"es":"","s":"abc","ns":"12","fs":" 4.5 ","ea":[],"a":[1],"eo":{},"o":{"a":1}}
        """#

    private func check(_ cases: [(String, String?)], sourceLocation: SourceLocation = #_sourceLocation) async throws {
        try await withDatabase { db, _ in
            try await SQLPP.save(db, "d", Self.document)
            try await SQLPP.expect(db, cases, sourceLocation: sourceLocation)
        }
    }

    @Test func typeTests() async throws {
        try await check([
            ("ISNUMBER(nope)", nil), ("ISNUMBER(n)", "null"), ("ISNUMBER(t)", "false"), ("ISNUMBER(i)", "true"), ("ISNUMBER(d)", "true"),
            ("IS_NUMBER(ns)", "false"), ("IS_NUMBER(a)", "false"), ("ISNUMBER(o)", "false"),
            ("ISSTRING(s)", "true"), ("ISSTRING(es)", "true"), ("ISSTRING(i)", "false"), ("IS_STRING(n)", "null"), ("ISSTRING(nope)", nil),
            ("ISBOOLEAN(t)", "true"), ("ISBOOLEAN(f)", "true"), ("ISBOOLEAN(zero)", "false"), ("IS_BOOLEAN(s)", "false"),
            ("ISARRAY(a)", "true"), ("ISARRAY(ea)", "true"), ("ISARRAY(o)", "false"), ("IS_ARRAY(n)", "null"),
            ("ISOBJECT(o)", "true"), ("ISOBJECT(eo)", "true"), ("IS_OBJECT(a)", "false"), ("IS_OBJECT(nope)", nil),
            ("ISATOM(t)", "true"), ("ISATOM(i)", "true"), ("ISATOM(s)", "true"), ("ISATOM(a)", "false"), ("IS_ATOM(o)", "false"),
            ("IS_ATOM(n)", "null"), ("ISATOM(nope)", nil),
            ("TYPE(t)", #""boolean""#), ("TYPE(i)", #""number""#), ("TYPE(d)", #""number""#), ("TYPE(s)", #""string""#),
            ("TYPE(a)", #""array""#), ("TYPE(o)", #""object""#), ("TYPE(n)", "null"), ("TYPE(nope)", nil),
            ("TYPENAME(ea)", #""array""#), ("TYPENAME(eo)", #""object""#), ("TYPENAME(f)", #""boolean""#),
        ])
    }

    @Test func conversions() async throws {
        try await check([
            ("TOBOOLEAN(nope)", nil), ("TOBOOLEAN(n)", "null"), ("TOBOOLEAN(t)", "true"), ("TOBOOLEAN(f)", "false"),
            ("TOBOOLEAN(zero)", "false"), ("TOBOOLEAN(i)", "true"), ("TOBOOLEAN(d)", "true"), ("TOBOOLEAN(es)", "false"),
            ("TOBOOLEAN(s)", "true"), ("TOBOOLEAN('false')", "true"), ("TOBOOLEAN(ea)", "false"), ("TO_BOOLEAN(a)", "true"),
            ("TOBOOLEAN(eo)", "false"), ("TOBOOLEAN(o)", "true"),
            ("TONUMBER(nope)", nil), ("TONUMBER(n)", "null"), ("TONUMBER(t)", "1"), ("TONUMBER(f)", "0"), ("TONUMBER(i)", "7"),
            ("TONUMBER(d)", "2.5"), ("TONUMBER(s)", "null"), ("TONUMBER(es)", "null"), ("TONUMBER(ns)", "12"), ("TO_NUMBER(fs)", "4.5"),
            ("TONUMBER('1e3')", "1000"), ("TONUMBER(a)", "null"), ("TONUMBER(o)", "null"),
            ("TOSTRING(nope)", nil), ("TOSTRING(n)", "null"), ("TOSTRING(t)", #""true""#), ("TOSTRING(f)", #""false""#),
            ("TOSTRING(i)", #""7""#), ("TOSTRING(d)", #""2.5""#), ("TO_STRING(s)", #""abc""#), ("TOSTRING(a)", "null"),
            ("TOSTRING(o)", "null"),
            ("TOOBJECT(nope)", nil), ("TOOBJECT(n)", "null"), ("TOOBJECT(o)", #"{"a":1}"#), ("TOOBJECT(eo)", "{}"),
            ("TOOBJECT(i)", "{}"), ("TOOBJECT(s)", "{}"), ("TO_OBJECT(a)", "{}"), ("TOOBJECT(t)", "{}"),
            ("TOATOM(a)", "1"), ("TOATOM(o)", "1"), ("TOATOM(ea)", "null"), ("TOATOM(s)", #""abc""#), ("TOATOM(nope)", nil),
            ("TOARRAY(o)", #"[{"a":1}]"#),
        ])
    }

    @Test func concatConvertsNumbersAndBooleans() async throws {
        try await check([
            ("CONCAT(99, ' ', 123.45, ' ', true)", #""99 123.45 true""#),
            ("CONCAT(i, '/', d, '/', f)", #""7/2.5/false""#), ("CONCAT(s, nope)", nil), ("CONCAT(s, n)", #""abcnull""#),
            ("CONCAT('a', a)", #""a[1]""#), ("CONCAT('x', o)", #""x{\"a\":1}""#), ("CONCAT(2.0, 'x')", #""2x""#),
            ("'a' || 1", #""a1""#), ("'a' || nope", nil), ("i || s", #""7abc""#), ("s || t", #""abctrue""#),
        ])
    }
}
