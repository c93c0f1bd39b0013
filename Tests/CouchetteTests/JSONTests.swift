import Foundation
import Testing

@testable import Couchette

/// JSON text to and from ``Value``: ``JSON/parse(_:)`` and ``JSON/string(from:)``.
@Suite(.tags(.sanitizeAddress, .sanitizeAddress)) struct JSONTests {
    // MARK: - Parsing

    @Test func parsesEveryKindOfValue() throws {
        #expect(try JSON.parse("null") == .null)
        #expect(try JSON.parse("true") == .bool(true))
        #expect(try JSON.parse("false") == .bool(false))
        #expect(try JSON.parse("0") == .int(0))
        #expect(try JSON.parse("-0") == .int(0))
        #expect(try JSON.parse("42") == .int(42))
        #expect(try JSON.parse("-17") == .int(-17))
        #expect(try JSON.parse("1.5") == .double(1.5))
        #expect(try JSON.parse("-0.25") == .double(-0.25))
        #expect(try JSON.parse("2.0") == .double(2))  // a decimal point makes a double
        #expect(try JSON.parse("1e3") == .double(1000))
        #expect(try JSON.parse("1E+2") == .double(100))
        #expect(try JSON.parse("25e-2") == .double(0.25))
        #expect(try JSON.parse("\"text\"") == .string("text"))
        #expect(try JSON.parse("\"\"") == .string(""))
        #expect(try JSON.parse("[]") == .array([]))
        #expect(try JSON.parse("{}") == .dictionary([:]))
        #expect(
            try JSON.parse(" \n\t\r[ 1 , \"a\" , null ,true, {} , [ ] ] \n")
                == .array([.int(1), .string("a"), .null, .bool(true), .dictionary([:]), .array([])]))
        #expect(
            try JSON.parse(#"{ "a" : { "b" : [ 1, 2.5 ] }, "c" : null }"#)
                == .dictionary(["a": .dictionary(["b": .array([.int(1), .double(2.5)])]), "c": .null]))
        #expect(try JSON.parse("\"日本語 é 😀\"") == .string("日本語 é 😀"))
    }

    @Test func int64ExtremesAreExact() throws {
        #expect(try JSON.parse("9223372036854775807") == .int(.max))
        #expect(try JSON.parse("-9223372036854775808") == .int(.min))
        #expect(try JSON.parse("9007199254740993") == .int(9_007_199_254_740_993))  // not a double
        #expect(JSON.string(from: .int(.max)) == "9223372036854775807")
        #expect(JSON.string(from: .int(.min)) == "-9223372036854775808")
        #expect(JSON.string(from: .array([.int(.max), .int(.min), .int(0)])) == "[9223372036854775807,-9223372036854775808,0]")
        // One past the range stays an exact integer, as in CouchDB.
        #expect(try JSON.parse("9223372036854775808") == .largeInteger(LargeInteger(text: "9223372036854775808")!))
        #expect(try JSON.parse("-9223372036854775809") == .largeInteger(LargeInteger(text: "-9223372036854775809")!))
    }

    @Test func integralDoublesStayDoubles() {
        #expect(JSON.string(from: .double(2)) == "2.0")
        #expect(JSON.string(from: .double(-17)) == "-17.0")
        #expect(JSON.string(from: .double(0)) == "0.0")
        #expect(JSON.string(from: .double(-0.0)) == "0.0")  // CouchDB drops the sign of zero
        #expect(JSON.string(from: .double(100_000_000_000_000)) == "100000000000000.0")
        #expect(JSON.string(from: .double(1e20)) == "100000000000000000000.0")
        #expect(JSON.string(from: .double(1e21)) == "1e+21")
        #expect(JSON.string(from: .double(1.5e21)) == "1.5e+21")
        #expect(JSON.string(from: .double(1e-6)) == "0.000001")
        #expect(JSON.string(from: .double(-1.25e-7)) == "-1.25e-7")
        // Query results keep Couchbase Lite's form.
        #expect(JSON.string(from: .double(2), doubles: .couchbaseLite) == "2")
        #expect(JSON.string(from: .double(1e300), doubles: .couchbaseLite) == "1e+300")
    }

    @Test func doublesAreWrittenInTheirShortestRoundTripForm() throws {
        #expect(JSON.string(from: .double(0.1)) == "0.1")
        #expect(JSON.string(from: .double(1.5)) == "1.5")
        #expect(JSON.string(from: .double(-0.25)) == "-0.25")
        #expect(JSON.string(from: .double(1.0 / 3)) == "0.3333333333333333")
        #expect(JSON.string(from: .double(123_456.789)) == "123456.789")
        #expect(JSON.string(from: .double(0.1 + 0.2)) == "0.30000000000000004")
        #expect(JSON.string(from: .double(1e300)) == "1e+300")
        #expect(JSON.string(from: .double(Double.leastNonzeroMagnitude)) == "5e-324")
        #expect(JSON.string(from: .double(Double.greatestFiniteMagnitude)) == "1.7976931348623157e+308")

        var generator = ValueEncodingTests.SeededGenerator(seed: 99)
        for _ in 0..<2000 {
            let number = Double(bitPattern: generator.next())
            guard number.isFinite else { continue }
            let text = JSON.string(from: .double(number))
            let parsed = try JSON.parse(text)
            #expect(parsed.asDouble.bitPattern == (number == 0 ? 0 : number.bitPattern), "\(number) wrote \(text)")
            let digits = text.drop { $0 == "-" || $0 == "0" || $0 == "." }.prefix { $0 != "e" }.filter { $0 != "." }
            let swiftDigits = "\(number.magnitude)".drop { $0 == "0" || $0 == "." }.prefix { $0 != "e" }.filter { $0 != "." }
            #expect(
                digits.drop { $0 == "0" }.reversed().drop { $0 == "0" }.count
                    == swiftDigits.drop { $0 == "0" }.reversed().drop { $0 == "0" }.count, "\(number) wrote \(text)")
        }
    }

    @Test func nonFiniteDoublesAreWrittenAsNull() {
        #expect(JSON.string(from: .double(.nan)) == "null")
        #expect(JSON.string(from: .double(.infinity)) == "null")
        #expect(JSON.string(from: .array([.double(-.infinity)])) == "[null]")
    }

    @Test func outputIsCompactWithKeysInUTF8Order() throws {
        let value = Value.dictionary([
            "z": .int(4), "é": .int(1), "f": .array([.int(1), .null, .bool(false)]), "😀": .int(3),
            "A": .dictionary(["y": .string("v"), "x": .dictionary([:])]),
        ])
        #expect(JSON.string(from: value) == #"{"A":{"x":{},"y":"v"},"f":[1,null,false],"z":4,"é":1,"😀":3}"#)
        #expect(try JSON.parse(#"{ "b" : [1, 2], "a" : {"y":null} }"#).json == #"{"a":{"y":null},"b":[1,2]}"#)
    }

    @Test func valuesRoundTrip() throws {
        var generator = ValueEncodingTests.SeededGenerator(seed: 5)
        for _ in 0..<300 {
            let value = ValueEncodingTests.randomValue(depth: 0, using: &generator)
            let text = JSON.string(from: value)
            let parsed = try JSON.parse(text)
            #expect(parsed.json == text)
            #expect(parsed == value, "\(text)")  // kinds too: a double stays a double
        }
        let exact = Value.dictionary([
            "big": .int(.max), "small": .int(.min), "pi": .double(.pi), "list": .array([.null, .bool(true)]),
            "text": .string("line\nbreak \"quoted\" \\ / é 😀 \u{1}"), "empty": .dictionary([:]),
        ])
        #expect(try JSON.parse(JSON.string(from: exact)) == exact)
    }

    // MARK: - Strings and escapes

    @Test func specialCharactersAreEscaped() {
        #expect(JSON.string(from: .string("\"")) == #""\"""#)
        #expect(JSON.string(from: .string("\\")) == #""\\""#)
        #expect(JSON.string(from: .string("\n\r\t\u{08}\u{0C}")) == #""\n\r\t\b\f""#)
        #expect(JSON.string(from: .string("\u{0}\u{1}\u{1F}")) == #""\u0000\u0001\u001f""#)
        #expect(JSON.string(from: .string("a/b")) == #""a/b""#)  // `/` is not escaped
        #expect(JSON.string(from: .string("\u{7F} é 日 😀")) == "\"\u{7F} é 日 😀\"")  // UTF-8, not \u escapes
        #expect(JSON.string(from: .string("e\u{301}")) == "\"e\u{301}\"")  // not normalized
        #expect(JSON.string(from: .dictionary(["k\"ey\n": .null])) == #"{"k\"ey\n":null}"#)
    }

    @Test func everyControlCharacterRoundTrips() throws {
        let text =
            String(String.UnicodeScalarView((0..<0x20).compactMap(Unicode.Scalar.init)))
            + "\"\\/\u{7F}\u{80}\u{FFFF}\u{10FFFF}"
        let written = JSON.string(from: .string(text))
        #expect(!written.unicodeScalars.dropFirst().dropLast().contains { $0.value < 0x20 })
        #expect(try JSON.parse(written) == .string(text))
    }

    @Test func escapesAreDecoded() throws {
        #expect(try JSON.parse(#""\"\\\/\b\f\n\r\t""#) == .string("\"\\/\u{08}\u{0C}\n\r\t"))
        #expect(try JSON.parse(#""\u0041\u00e9\u00E9\u65e5""#) == .string("Aéé日"))
        #expect(try JSON.parse(#""\u0000""#) == .string("\u{0}"))
        #expect(try JSON.parse(#""\uD83D\uDE00""#) == .string("😀"))
        #expect(try JSON.parse(#""\ud83d\ude00 and \uDBFF\uDFFF""#) == .string("😀 and \u{10FFFF}"))
        #expect(try JSON.parse(#""e\u0301""#).json == "\"e\u{301}\"")
        #expect(try JSON.parse(#"{"\u006b":1}"#) == .dictionary(["k": .int(1)]))
    }

    // MARK: - Errors

    static let malformed: [(String, Int)] = [
        ("", 0),
        ("   ", 3),
        ("{\"a\":1} x", 8),
        ("[1] [2]", 4),
        ("nullx", 4),
        ("\"abc", 4),
        ("[\"abc", 5),
        ("{\"a", 3),
        ("[1,2", 4),
        ("[1,]", 3),
        ("[1 2]", 3),
        ("{\"a\":1,}", 7),
        ("{\"a\" 1}", 5),
        ("{1:2}", 1),
        ("{\"a\":}", 5),
        ("{\"a\":1", 6),
        ("tru", 0),
        ("nul", 0),
        ("True", 0),
        ("'a'", 0),
        ("01", 1),
        ("-", 1),
        ("-a", 1),
        ("1.", 2),
        ("1.e5", 2),
        ("1e", 2),
        ("1e+", 3),
        ("+1", 0),
        (".5", 0),
        ("1e400", 0),
        ("[-1e999]", 1),
        ("\"a\u{1}b\"", 2),
        ("\"line\nbreak\"", 5),
        ("\"tab\there\"", 4),
        ("\"\\x\"", 1),
        ("\"ab\\", 4),
        ("\"\\u12\"", 5),
        ("\"\\u12G4\"", 5),
        ("\"\\uD800\"", 1),
        ("\"\\uD800x\"", 1),
        ("\"\\uDC00\"", 1),
        ("\"a\\uDE00\\uD83D\"", 2),
        ("\"\\uD800\\u0041\"", 1),
        ("\"\\uD800\\uD800\"", 1),
        ("\"\\uD800\\n\"", 1),
    ]

    @Test(arguments: malformed)
    func malformedInputNamesTheByteOffset(text: String, offset: Int) async {
        let message = await expectCouchetteError(.invalidParameter) { _ = try JSON.parse(text) }
        #expect(message?.contains("at byte \(offset):") == true, "\(text.debugDescription): \(message ?? "")")
    }

    @Test func nestingUpTo512LevelsParses() throws {
        let deepest = String(repeating: "[", count: JSON.maximumDepth) + String(repeating: "]", count: JSON.maximumDepth)
        var value = try JSON.parse(deepest)
        var levels = 0
        while case .array(let elements) = value {
            levels += 1
            value = elements.first ?? .null
        }
        #expect(levels == 512)
        #expect(JSON.string(from: try JSON.parse(deepest)) == deepest)
        let objects = String(repeating: #"{"a":"#, count: 511) + "1" + String(repeating: "}", count: 511)
        #expect(JSON.string(from: try JSON.parse(objects)) == objects)
    }

    @Test func nestingBeyond512LevelsThrows() async {
        let tooDeep = String(repeating: "[", count: 513) + String(repeating: "]", count: 513)
        let message = await expectCouchetteError(.invalidParameter) { _ = try JSON.parse(tooDeep) }
        #expect(message?.contains("at byte 512:") == true, "\(message ?? "")")
        #expect(message?.contains("512") == true)

        // Far deeper input, closed or not, throws just the same instead of exhausting the stack.
        let hostile = String(repeating: "[", count: 1_000_000)
        await expectCouchetteError(.invalidParameter) { _ = try JSON.parse(hostile) }
        let objects = String(repeating: #"{"a":"#, count: 100_000) + "1" + String(repeating: "}", count: 100_000)
        await expectCouchetteError(.invalidParameter) { _ = try JSON.parse(objects) }
        let mixed = String(repeating: #"[{"a":"#, count: 300) + "1" + String(repeating: "}]", count: 300)
        await expectCouchetteError(.invalidParameter) { _ = try JSON.parse(mixed) }
    }
}

extension Value {
    /// Compact JSON text, for comparisons in tests.
    fileprivate var json: String { JSON.string(from: self) }
}
