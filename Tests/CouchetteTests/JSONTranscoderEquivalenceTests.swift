import Foundation
import Testing

@testable import Couchette

/// The JSON → binary transcoder against references that share none of its code: documents
/// generated here as ``Value``s and written out as text (escapes, whitespace, key order and number
/// spellings chosen at random), and Foundation's `JSONSerialization` reading the same text. The
/// stored format must not change, so the bytes must be exactly `ValueEncoder`'s.
@Suite struct JSONTranscoderEquivalenceTests {
    typealias SeededGenerator = ValueEncodingTests.SeededGenerator

    /// Writes random values as JSON text, remembering the value the text means.
    struct TextGenerator {
        var random: SeededGenerator
        /// Leaves out what Foundation reads differently from JSON's own rules: integers beyond
        /// 64 bits, and doubles without a fraction (which `JSONSerialization` may make integers).
        let foundationReadable: Bool

        mutating func chance(_ percent: UInt64) -> Bool { random.next() % 100 < percent }
        mutating func below(_ bound: Int) -> Int { Int(random.next() % UInt64(bound)) }

        mutating func whitespace() -> String {
            guard chance(15) else { return "" }
            return String([" ", "\n", "\t", "\r", "  "][below(5)])
        }

        /// A string of plain runs (short and long, around the scanner's 8-byte steps), characters
        /// that must be escaped, and non-ASCII ones, each escaped or not at random.
        mutating func string() -> (text: String, value: String) {
            var text = "\""
            var value = ""
            for _ in 0..<below(6) {
                switch below(7) {
                case 0, 1:
                    let run = String(repeating: "abcdefghijklmnopqrstuvwxyz0123456789 -.:", count: 2).prefix(below(40))
                    text += run
                    value += run
                case 2:
                    let (escaped, character) = [
                        (#"\""#, "\""), (#"\\"#, "\\"), (#"\/"#, "/"), (#"\n"#, "\n"), (#"\t"#, "\t"),
                        (#"\r"#, "\r"), (#"\b"#, "\u{08}"), (#"\f"#, "\u{0C}"), (#"\u0001"#, "\u{01}"), (#"\u0000"#, "\u{00}"),
                    ][below(10)]
                    text += escaped
                    value += character
                case 3:
                    let scalar = ["é", "ß", "€", "中", "😀", "𝄞", "\u{7F}", "\u{10FFFF}"][below(8)]
                    value += scalar
                    if chance(50) {
                        text += scalar
                    } else {
                        let uppercase = chance(50)
                        for unit in scalar.utf16 { text += "\\u" + Self.hex4(unit, uppercase: uppercase) }
                    }
                case 4:
                    text += "/"
                    value += "/"
                default:
                    let run = ["k", "key", "exactly8", "sixteen-bytes-ok", "名前"][below(5)]
                    text += run
                    value += run
                }
            }
            return (text + "\"", value)
        }

        mutating func number() -> (text: String, value: Value) {
            let boundaries: [Int64] = [
                0, -1, 1, 127, 128, -128, -129, 32767, 32768, -32768, -32769, 2_147_483_647, 2_147_483_648, -2_147_483_648,
                -2_147_483_649, .max, .min, 999_999_999_999_999_999, -999_999_999_999_999_999, 1_000_000_000_000_000_000,
            ]
            switch below(foundationReadable ? 4 : 6) {
            case 0:
                let number = boundaries[below(boundaries.count)]
                return (String(number), .int(number))
            case 1:
                let number = Int64(bitPattern: random.next()) >> Int64(below(63))
                return (String(number), .int(number))
            case 2, 3:
                if foundationReadable {
                    // Few digits, which Foundation's reader rounds right (it misrounds some long ones).
                    var thousandths = Int64(bitPattern: random.next()) >> Int64(below(40) + 20)
                    if thousandths % 1000 == 0 { thousandths += 1 }
                    let number = Double(thousandths) / 1000
                    return (number.description, .double(number))
                }
                // A double with a fraction, in Swift's shortest round-trip spelling (exponents too).
                var number = Double(bitPattern: random.next() & 0x3FFF_FFFF_FFFF_FFFF | 0x3000_0000_0000_0000)
                if number == number.rounded() { number += 0.5 }
                if chance(50) { number = -number }
                return (number.description, .double(number))
            case 4:
                let spellings: [(String, Double)] = [("1.0", 1), ("-0.0", -0.0), ("2.50e1", 25), ("1E3", 1000), ("1e-7", 1e-7), ("0.0", 0)]
                let (text, number) = spellings[below(spellings.count)]
                return (text, .double(number))
            default:
                let digits = ["9223372036854775808", "-9223372036854775809", "123456789012345678901234567890", "18446744073709551616"]
                let text = digits[below(digits.count)]
                return (text, .largeInteger(LargeInteger(text: text)!))
            }
        }

        mutating func value(depth: Int) -> (text: String, value: Value) {
            switch below(depth >= 5 ? 6 : 8) {
            case 0: return ("null", .null)
            case 1:
                let flag = chance(50)
                return (flag ? "true" : "false", .bool(flag))
            case 2, 3: return number()
            case 4, 5:
                let (text, value) = string()
                return (text, .string(value))
            case 6:
                var texts: [String] = []
                var values: [Value] = []
                for _ in 0..<below(6) {
                    let (text, value) = value(depth: depth + 1)
                    texts.append(whitespace() + text + whitespace())
                    values.append(value)
                }
                return ("[" + whitespace() + texts.joined(separator: ",") + "]", .array(values))
            default: return object(depth: depth)
            }
        }

        /// An object with keys in order, shuffled, or with a key repeated (the last one counts).
        mutating func object(depth: Int) -> (text: String, value: Value) {
            var entries: [(key: String, text: String)] = []
            var values: [String: Value] = [:]
            for _ in 0..<below(9) {
                let (keyText, key) = string()
                let (text, value) = value(depth: depth + 1)
                if values[key] != nil { entries.removeAll { $0.key == key } }
                entries.append((key, whitespace() + keyText + whitespace() + ":" + whitespace() + text))
                values[key] = value
            }
            if chance(50) { entries.sort { $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) } }
            if !foundationReadable, let repeated = entries.first, chance(30) {
                // An earlier value for the first key, which the later one replaces.
                entries.insert((repeated.key, Self.keyText(repeated.key) + ":[\"replaced\"]"), at: 0)
            }
            return ("{" + whitespace() + entries.map(\.text).joined(separator: ",") + whitespace() + "}", .dictionary(values))
        }

        /// `key` written with every character that needs it escaped as `\uXXXX`.
        static func keyText(_ key: String) -> String {
            var text = "\""
            for unit in key.utf16 {
                if unit < 0x20 || unit == 0x22 || unit == 0x5C || unit >= 0x80 {
                    text += "\\u" + hex4(unit, uppercase: false)
                } else {
                    text += String(UnicodeScalar(UInt8(unit)))
                }
            }
            return text + "\""
        }

        static func hex4(_ unit: UInt16, uppercase: Bool) -> String {
            let digits = String(unit, radix: 16, uppercase: uppercase)
            return String(repeating: "0", count: 4 - digits.count) + digits
        }
    }

    @Test(arguments: [1, 2, 3, 4])
    func randomDocumentsTranscodeToTheEncodersBytes(seed: UInt64) throws {
        var generator = TextGenerator(random: SeededGenerator(seed: seed), foundationReadable: false)
        for _ in 0..<400 {
            let (text, value) = generator.object(depth: 0)
            let expected = try ValueEncoder.encode(value)
            #expect(try JSON.encodeBinary(text) == expected, "\(text)")
            #expect(try JSON.parse(text) == value, "\(text)")
            let fromBytes = try Array(text.utf8).withUnsafeBufferPointer { try JSON.encodeBinary(utf8: $0) }
            #expect(fromBytes == expected)
        }
    }

    /// Foundation's reader, converted as `MutableDocument(data:)` converts, gives the same bytes.
    @Test func randomDocumentsMatchFoundationsReading() throws {
        var generator = TextGenerator(random: SeededGenerator(seed: 99), foundationReadable: true)
        var checked = 0
        for _ in 0..<400 {
            let (text, _) = generator.object(depth: 0)
            let object = try JSONSerialization.jsonObject(with: Data(text.utf8), options: [.fragmentsAllowed])
            guard case .value(let value) = ValueConversion.convert(object) else {
                Issue.record("Foundation's reading of \(text) does not convert")
                continue
            }
            // Foundation may read an integer near the ends of Int64 as a double.
            guard !Self.hasWholeDouble(value) else { continue }
            checked += 1
            let binary = try JSON.encodeBinary(text)
            #expect(binary == (try ValueEncoder.encode(value)), "\(text)")
            // And decoded back, the stored bytes are what Foundation read.
            guard case .value(let decoded) = ValueConversion.convert(ValueConversion.plain(EncodedValue(bytes: binary))) else {
                Issue.record("the stored bytes of \(text) do not convert back")
                continue
            }
            #expect(decoded == value)
        }
        #expect(checked >= 200)
    }

    /// Values whose binary form outgrows the room the transcoder first takes (empty containers
    /// take more bytes than their text), or nest deeper than its first bookkeeping holds.
    @Test func valuesLargerOrDeeperThanTheFirstRoomMatch() throws {
        let empties = Value.array(Array(repeating: .array([]), count: 3000))
        #expect(try JSON.encodeBinary(JSON.string(from: empties)) == ValueEncoder.encode(empties))
        var nested = Value.dictionary(["leaf": .int(1)])
        for level in 0..<300 { nested = level % 2 == 0 ? .array([nested, .null]) : .dictionary(["z": nested, "a": .bool(true)]) }
        #expect(try JSON.encodeBinary(JSON.string(from: nested)) == ValueEncoder.encode(nested))
    }

    /// Every fixture document (one value per file, or JSON lines) through Foundation's reader.
    @Test func fixtureDocumentsMatchFoundationsReading() throws {
        let directory = JSONTranscodingTests.fixtureData
        let files = try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { $0.hasSuffix(".json") }
        var checked = 0
        for file in files {
            let text = try String(contentsOf: directory.appendingPathComponent(file), encoding: .utf8)
            let values = (try? JSON.parse(text)) != nil ? [Substring(text)] : text.split(separator: "\n")
            for line in values where !line.isEmpty {
                let json = String(line)
                let object = try JSONSerialization.jsonObject(with: Data(json.utf8), options: [.fragmentsAllowed])
                guard case .value(let value) = ValueConversion.convert(object), !Self.hasWholeDouble(value) else { continue }
                #expect(try JSON.encodeBinary(json) == ValueEncoder.encode(value), "\(file): \(json.prefix(60))")
                checked += 1
            }
        }
        #expect(checked >= 250)
    }

    private static func hasWholeDouble(_ value: Value) -> Bool {
        switch value {
        case .double(let number): number == number.rounded()
        case .array(let elements): elements.contains(where: hasWholeDouble)
        case .dictionary(let entries): entries.values.contains(where: hasWholeDouble)
        default: false
        }
    }

    /// Hostile and broken text fails with the message naming the first bad byte, from both readers.
    @Test(arguments: [
        ("", "byte 0: unexpected end of input"),
        ("   ", "byte 3: unexpected end of input"),
        (String(repeating: "[", count: 513) + String(repeating: "]", count: 513), "byte 512: nesting deeper than 512 levels"),
        (String(repeating: "{\"a\":", count: 600), "byte 2560: nesting deeper than 512 levels"),
        ("1e400", "byte 0: number 1e400 out of range"),
        ("[-1e999]", "byte 1: number -1e999 out of range"),
        (#"["ab\q"]"#, "byte 4: invalid escape"),
        (#"["\u12"]"#, #"byte 6: invalid hex digit in \u escape"#),
        (#"["\u12"#, #"byte 6: truncated \u escape"#),
        (#"["\ud800"]"#, "byte 2: lone surrogate"),
        (#"["x\ud800\u0041"]"#, "byte 3: invalid surrogate pair"),
        (#"["\udc00"]"#, "byte 2: lone surrogate"),
        (#"{"a":[1,2"#, "byte 9: unterminated array"),
        (#"{"a":1"#, "byte 6: unterminated object"),
        (#"{"abc"#, "byte 5: unterminated string"),
        (#"{"abcdefghijklmnopq"#, "byte 19: unterminated string"),
        (#"["abc\n"#, "byte 7: unterminated string"),
        (#"["abc\"#, "byte 6: unterminated escape"),
        ("[\"abcdefgh\u{01}xyz\"]", "byte 10: control character in string"),
        ("[\"a\\n bcdefghijk\u{1F}\"]", "byte 16: control character in string"),
        ("tru", "byte 0: expected 'true'"),
        ("[nulL]", "byte 1: expected 'null'"),
        ("[01]", "byte 2: expected ',' or ']'"),
        (#"{"a":1 "b":2}"#, "byte 7: expected ',' or '}'"),
        ("-", "byte 1: invalid number"),
        ("-x", "byte 1: invalid number"),
        ("1.", "byte 2: digits expected after '.'"),
        ("1e+", "byte 3: digits expected in exponent"),
        (#"{"a":1,}"#, "byte 7: expected a key string"),
        (#"{"a" 1}"#, "byte 5: expected ':'"),
        ("@", "byte 0: unexpected character '@'"),
        ("[1] x", "byte 4: unexpected text after the JSON value"),
    ])
    func brokenTextFailsClearly(text: String, problem: String) {
        for result in [Result { try JSON.encodeBinary(text) }.map { _ in () }, Result { try JSON.parse(text) }.map { _ in () }] {
            #expect(throws: CouchetteError(.invalidParameter, "invalid JSON at \(problem)")) { try result.get() }
        }
    }

    /// Documents cut short or with one byte changed fail in the transcoder's loop exactly as in
    /// the recursive parser (message and offset), and what still parses gives the same value.
    @Test(arguments: [5, 6])
    func brokenDocumentsFailAsTheParserDoes(seed: UInt64) throws {
        var generator = TextGenerator(random: SeededGenerator(seed: seed), foundationReadable: false)
        let replacements = Array(#"{}[]:,"\ 0-.e1tfnx"#.utf8) + [0x00, 0x1F, 0x7F, 0xC3]
        var failures = 0
        for _ in 0..<300 {
            let text = Array(generator.object(depth: 0).text.utf8)
            var broken: [[UInt8]] = [Array(text[..<generator.below(text.count)])]
            for _ in 0..<6 {
                var changed = text
                changed[generator.below(text.count)] = replacements[generator.below(replacements.count)]
                broken.append(changed)
            }
            for bytes in broken {
                // The parser over the same bytes (a `String` would mend bad UTF-8, moving offsets).
                let parsed = Result {
                    var sink = ValueSink()
                    try bytes.withUnsafeBufferPointer { try JSONParser.parse(utf8: $0, into: &sink) }
                    return sink.result
                }
                let binary = Result { try bytes.withUnsafeBufferPointer { try JSON.encodeBinary(utf8: $0) } }
                switch (parsed, binary) {
                case (.failure(let parseError), .failure(let binaryError)):
                    #expect("\(binaryError)" == "\(parseError)", "\(String(decoding: bytes, as: UTF8.self))")
                    failures += 1
                case (.success(let value), .success(let encoded)):
                    // Not UTF-8 only inside strings, which both keep (as replacement characters
                    // when the value is a `Value`).
                    if String(validating: bytes, as: UTF8.self) != nil { #expect(encoded == (try ValueEncoder.encode(value))) }
                default:
                    Issue.record("the readers disagree on \(String(decoding: bytes, as: UTF8.self)): \(parsed) vs \(binary)")
                }
            }
        }
        #expect(failures >= 1000)
    }

    /// Plain strings ending anywhere near the end of the input (the scan reads its last eight
    /// bytes at once there), cut off, or stopped by a control byte.
    @Test func stringsNearTheEndOfTheInputMatch() throws {
        let letters = "abcdefghijklmnopqrstuvwxyz"
        for length in 0...20 {
            let plain = String(letters.prefix(length))
            #expect(try JSON.encodeBinary("\"\(plain)\"") == ValueEncoder.encode(.string(plain)), "\(length)")
            #expect(try JSON.encodeBinary("[\"\(plain)\"]") == ValueEncoder.encode(.array([.string(plain)])), "\(length)")
            #expect(throws: CouchetteError(.invalidParameter, "invalid JSON at byte \(length + 1): unterminated string")) {
                try JSON.encodeBinary("\"\(plain)")
            }
            for stop in 0..<length {
                var bytes = Array("\"\(plain)\"".utf8)
                bytes[1 + stop] = 0x1F
                #expect(throws: CouchetteError(.invalidParameter, "invalid JSON at byte \(stop + 1): control character in string")) {
                    try bytes.withUnsafeBufferPointer { try JSON.encodeBinary(utf8: $0) }
                }
            }
        }
    }

    /// Nesting up to the limit transcodes as the encoder writes it, without recursion: 512
    /// containers, keys out of order at every level; one value deeper fails at its first byte.
    @Test func nestingUpToTheLimitMatches() throws {
        var nested = Value.array([])
        for level in 1..<JSON.maximumDepth {
            nested = level % 3 == 0 ? .array([.int(Int64(level)), nested]) : .dictionary(["z": nested, "a": .string("\(level)")])
        }
        #expect(try JSON.encodeBinary(JSON.string(from: nested)) == ValueEncoder.encode(nested))
        let arrays = String(repeating: "[", count: JSON.maximumDepth) + String(repeating: "]", count: JSON.maximumDepth)
        #expect(try JSON.encodeBinary(arrays) == ValueEncoder.encode(JSON.parse(arrays)))
        let tooDeep = String(repeating: "[", count: JSON.maximumDepth) + "1" + String(repeating: "]", count: JSON.maximumDepth)
        #expect(throws: CouchetteError(.invalidParameter, "invalid JSON at byte 512: nesting deeper than 512 levels")) {
            try JSON.encodeBinary(tooDeep)
        }
    }

    /// Bytes that are not UTF-8 inside a string are carried, not read as structure, and a
    /// sequence cut off by the end of the input is an unterminated string.
    @Test func bytesThatAreNotUTF8StayInsideTheirString() throws {
        let text: [UInt8] = Array(#"{"k":"#.utf8) + [0x22, 0xFF, 0xC3, 0x28, 0x80, 0x5B, 0x22, 0x7D]
        let binary = try text.withUnsafeBufferPointer { try JSON.encodeBinary(utf8: $0) }
        #expect(EncodedValue(bytes: binary).count == 1)
        #expect(binary.firstRange(of: [ValueTag.string, 5, 0xFF, 0xC3, 0x28, 0x80, 0x5B]) != nil)
        let cut: [UInt8] = Array(#"["abcdefghij"#.utf8) + [0xE2, 0x82]
        #expect(throws: CouchetteError(.invalidParameter, "invalid JSON at byte 14: unterminated string")) {
            try cut.withUnsafeBufferPointer { try JSON.encodeBinary(utf8: $0) }
        }
    }
}
