import Foundation
import Testing

@testable import Couchette

/// The binary body format: ``ValueEncoder`` writes it, ``EncodedValue`` reads it lazily.
@Suite(.tags(.sanitizeAddress, .sanitizeAddress)) struct ValueEncodingTests {
    // MARK: - Scalars

    @Test func nullAndBooleansAreOneTagByte() throws {
        #expect(try ValueEncoder.encode(.null) == [ValueTag.null])
        #expect(try ValueEncoder.encode(.bool(false)) == [ValueTag.falseValue])
        #expect(try ValueEncoder.encode(.bool(true)) == [ValueTag.trueValue])

        let null = EncodedValue(bytes: [ValueTag.null])
        #expect(null.isNull)
        #expect(null.bool == nil && null.integer == nil && null.string == nil)
        #expect(null.decode() == .null)
        #expect(EncodedValue(bytes: [ValueTag.trueValue]).bool == true)
        #expect(EncodedValue(bytes: [ValueTag.falseValue]).bool == false)
        #expect(EncodedValue(bytes: [ValueTag.falseValue]).isNull == false)
        #expect(EncodedValue(bytes: [ValueTag.trueValue]).decode() == .bool(true))
        #expect(EncodedValue(bytes: [ValueTag.falseValue]).decode() == .bool(false))
    }

    static let integerWidths: [(Int64, UInt8, Int)] = [
        (0, ValueTag.int8, 2), (1, ValueTag.int8, 2), (-1, ValueTag.int8, 2),
        (127, ValueTag.int8, 2), (-128, ValueTag.int8, 2),
        (128, ValueTag.int16, 3), (-129, ValueTag.int16, 3),
        (32767, ValueTag.int16, 3), (-32768, ValueTag.int16, 3),
        (32768, ValueTag.int32, 5), (-32769, ValueTag.int32, 5),
        (2_147_483_647, ValueTag.int32, 5), (-2_147_483_648, ValueTag.int32, 5),
        (2_147_483_648, ValueTag.int64, 9), (-2_147_483_649, ValueTag.int64, 9),
        (Int64.max, ValueTag.int64, 9), (Int64.min, ValueTag.int64, 9),
    ]

    @Test(arguments: integerWidths)
    func integersUseTheNarrowestWidth(number: Int64, tag: UInt8, size: Int) throws {
        let bytes = try ValueEncoder.encode(.int(number))
        #expect(bytes.first == tag)
        #expect(bytes.count == size)
        let encoded = EncodedValue(bytes: bytes)
        #expect(encoded.integer == number)
        #expect(encoded.double == nil)  // integers and doubles stay distinct
        #expect(encoded.encodedSize == size)
        #expect(encoded.decode() == .int(number))
    }

    @Test func integersAreLittleEndianTwosComplement() throws {
        #expect(try ValueEncoder.encode(.int(-2)) == [ValueTag.int8, 0xFE])
        #expect(try ValueEncoder.encode(.int(0x0102)) == [ValueTag.int16, 0x02, 0x01])
        #expect(try ValueEncoder.encode(.int(-129)) == [ValueTag.int16, 0x7F, 0xFF])
        #expect(try ValueEncoder.encode(.int(0x0102_0304)) == [ValueTag.int32, 0x04, 0x03, 0x02, 0x01])
        #expect(try ValueEncoder.encode(.int(Int64.min)) == [ValueTag.int64, 0, 0, 0, 0, 0, 0, 0, 0x80])
        #expect(
            try ValueEncoder.encode(.int(Int64.max))
                == [ValueTag.int64, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x7F])
    }

    static let finiteDoubles: [Double] = [
        0.0, -0.0, 1.0, 2.0, -1.5, 0.1, .pi, 1e-300, -1e300,
        Double.leastNonzeroMagnitude, -Double.leastNonzeroMagnitude, Double.leastNormalMagnitude,
        Double.greatestFiniteMagnitude, -Double.greatestFiniteMagnitude, 9_007_199_254_740_992,
    ]

    @Test(arguments: finiteDoubles)
    func doublesKeepEveryBit(number: Double) throws {
        let bytes = try ValueEncoder.encode(.double(number))
        var expected: [UInt8] = [ValueTag.double]
        withUnsafeBytes(of: number.bitPattern.littleEndian) { expected.append(contentsOf: $0) }
        #expect(bytes == expected)
        let encoded = EncodedValue(bytes: bytes)
        #expect(encoded.double?.bitPattern == number.bitPattern)  // -0.0 keeps its sign
        #expect(encoded.integer == nil)  // 2.0 stays a double
        guard case .double(let decoded) = encoded.decode() else {
            Issue.record("\(number) did not decode as a double")
            return
        }
        #expect(decoded.bitPattern == number.bitPattern)
    }

    @Test func stringsAreLengthPrefixedUTF8() throws {
        #expect(try ValueEncoder.encode(.string("")) == [ValueTag.string, 0])
        #expect(try ValueEncoder.encode(.string("hé")) == [ValueTag.string, 3, 0x68, 0xC3, 0xA9])
        // Lengths are LEB128 varints: 200 bytes take two length bytes (0xC8 0x01).
        #expect(Array(try ValueEncoder.encode(.string(String(repeating: "y", count: 200))).prefix(3)) == [ValueTag.string, 0xC8, 0x01])
        for text in ["", "plain", "é", "e\u{301}", "😀👍🏽", "日本語", "nul\u{0}inside", String(repeating: "x", count: 70_000)] {
            let encoded = EncodedValue(bytes: try ValueEncoder.encode(.string(text)))
            #expect(encoded.string == text)
            #expect(encoded.string?.utf8.elementsEqual(text.utf8) == true)  // bytes kept, not normalized
            #expect(encoded.decode() == .string(text))
            let lengthBytes = text.utf8.count < 128 ? 1 : text.utf8.count < 16_384 ? 2 : 3
            #expect(encoded.encodedSize == 1 + lengthBytes + text.utf8.count)
        }
    }

    // MARK: - Non-finite doubles

    static let nonFinite: [Double] = [.nan, -.nan, .signalingNaN, .infinity, -.infinity]

    @Test(arguments: nonFinite)
    func nonFiniteDoublesAreRejectedNamingTheKeyPath(number: Double) async throws {
        let atRoot = await expectCouchetteError(.invalidParameter) { _ = try ValueEncoder.encode(.double(number)) }
        #expect(atRoot?.contains("(root)") == true, "\(atRoot ?? "")")

        let nested = Value.dictionary([
            "fine": .double(1),
            "outer": .dictionary(["inner": .array([.int(1), .string("x"), .double(number)])]),
        ])
        let message = await expectCouchetteError(.invalidParameter) { _ = try ValueEncoder.encode(nested) }
        #expect(message?.contains("outer.inner[2]") == true, "\(message ?? "")")

        let inArray = Value.array([.null, .array([.double(number)])])
        let arrayMessage = await expectCouchetteError(.invalidParameter) { _ = try ValueEncoder.encode(inArray) }
        #expect(arrayMessage?.contains("[1][0]") == true, "\(arrayMessage ?? "")")
    }

    // MARK: - Containers

    @Test func emptyContainersAreJustAHeader() throws {
        let emptyArray = try ValueEncoder.encode(.array([]))
        #expect(emptyArray == [ValueTag.narrowArray, 5, 0, 0, 0])
        let emptyDictionary = try ValueEncoder.encode(.dictionary([:]))
        #expect(emptyDictionary == [ValueTag.narrowDictionary, 5, 0, 0, 0])

        let array = EncodedValue(bytes: emptyArray)
        #expect(array.isArray && !array.isDictionary)
        #expect(array.count == 0)
        #expect(array.element(at: 0) == nil)
        #expect(array.decode() == .array([]))
        let dictionary = EncodedValue(bytes: emptyDictionary)
        #expect(dictionary.isDictionary && !dictionary.isArray)
        #expect(dictionary.count == 0)
        #expect(dictionary.keys.isEmpty)
        #expect(dictionary.value(forKey: "") == nil)
        #expect(dictionary.value(forKey: "a") == nil)
        #expect(dictionary.decode() == .dictionary([:]))
    }

    @Test func arrayLayoutMatchesTheSpecification() throws {
        let bytes = try ValueEncoder.encode(.array([.int(1), .null]))
        // Narrow: tag, total size 12, count 2, offsets 9 and 11 (u16), then the elements.
        #expect(bytes == [ValueTag.narrowArray, 12, 0, 2, 0, 9, 0, 11, 0, ValueTag.int8, 1, ValueTag.null])
        let encoded = EncodedValue(bytes: bytes)
        #expect(encoded.count == 2)
        #expect(encoded.encodedSize == bytes.count)
        #expect(encoded.element(at: 0)?.integer == 1)
        #expect(encoded.element(at: 1)?.isNull == true)
        #expect(encoded.element(at: 2) == nil)
        #expect(encoded.element(at: -1) == nil)
        #expect(encoded.value(forKey: "0") == nil)  // not a dictionary
    }

    @Test func containersTooBigForSixteenBitsStayWide() throws {
        let big = Value.array([.string(String(repeating: "w", count: 70_000)), .int(7)])
        let bytes = try ValueEncoder.encode(big)
        #expect(bytes[0] == ValueTag.array)
        let encoded = EncodedValue(bytes: bytes)
        #expect(encoded.encodedSize == bytes.count)
        #expect(encoded.element(at: 1)?.integer == 7)
        // Its small children are still narrow, and keep working once moved.
        let nested = try ValueEncoder.encode(.dictionary(["big": big, "small": .array([.int(1), .int(2)])]))
        let outer = EncodedValue(bytes: nested)
        #expect(nested[0] == ValueTag.dictionary)
        #expect(outer.value(forKey: "small")?.tag == ValueTag.narrowArray)
        #expect(outer.value(forKey: "small")?.element(at: 1)?.integer == 2)
        #expect(outer.decode() == .dictionary(["big": big, "small": .array([.int(1), .int(2)])]))
    }

    @Test func dictionaryLayoutMatchesTheSpecification() throws {
        let bytes = try ValueEncoder.encode(.dictionary(["a": .bool(true)]))
        // Narrow: tag, total size 12, count 1, key offset 9, value offset 11, key "a", value true.
        #expect(bytes == [ValueTag.narrowDictionary, 12, 0, 1, 0, 9, 0, 11, 0, 1, UInt8(ascii: "a"), ValueTag.trueValue])
        let encoded = EncodedValue(bytes: bytes)
        #expect(encoded.encodedSize == bytes.count)
        #expect(encoded.value(forKey: "a")?.bool == true)
        #expect(encoded.element(at: 0) == nil)  // not an array
    }

    @Test func nestedValuesRoundTripAndSliceToTheirOwnEncoding() throws {
        let inner = Value.dictionary([
            "list": .array([.int(1), .double(2.5), .string("three"), .null]),
            "flag": .bool(false),
        ])
        let value = Value.dictionary([
            "inner": inner,
            "matrix": .array([.array([.int(1), .int(2)]), .array([]), .array([.dictionary([:])])]),
            "name": .string("outer"),
        ])
        let bytes = try ValueEncoder.encode(value)
        let root = EncodedValue(bytes: bytes)
        #expect(root.decode() == value)
        #expect(root.encodedSize == bytes.count)
        #expect(root.slice == bytes)

        let innerEncoded = try #require(root.value(forKey: "inner"))
        #expect(innerEncoded.slice == (try ValueEncoder.encode(inner)))
        #expect(innerEncoded.value(forKey: "list")?.element(at: 2)?.string == "three")
        #expect(innerEncoded.value(forKey: "list")?.element(at: 1)?.double == 2.5)
        #expect(root.value(forKey: "matrix")?.element(at: 0)?.element(at: 1)?.integer == 2)
        #expect(root.value(forKey: "matrix")?.element(at: 2)?.element(at: 0)?.isDictionary == true)
        #expect(root.value(forKey: "name")?.slice == (try ValueEncoder.encode(.string("outer"))))
    }

    @Test func deepNestingRoundTrips() throws {
        var value = Value.string("bottom")
        for level in 0..<200 {
            value = level.isMultiple(of: 2) ? .array([value]) : .dictionary(["k\(level)": value])
        }
        let encoded = EncodedValue(bytes: try ValueEncoder.encode(value))
        #expect(encoded.decode() == value)
    }

    // MARK: - Keys

    @Test func keysAreSortedByTheirUTF8Bytes() throws {
        // "e\u{301}" (e + combining acute) sorts before "f" by bytes but after it as a Swift String
        // (Swift compares canonical equivalents, so it sees "é"); the encoding must use bytes.
        #expect("f" < "e\u{301}")
        let keys = ["f", "e\u{301}", "😀", "\u{FFFD}", "Z", "a", "", "日本", "ab", "aa", "a\u{0}"]
        var entries: [String: Value] = [:]
        for (index, key) in keys.enumerated() { entries[key] = .int(Int64(index)) }
        let encoded = EncodedValue(bytes: try ValueEncoder.encode(.dictionary(entries)))

        let expectedOrder = keys.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
        #expect(encoded.keys.map { Array($0.utf8) } == expectedOrder.map { Array($0.utf8) })
        #expect(encoded.keys.first == "")
        #expect(encoded.keys.last == "😀")
        #expect(encoded.entries.map(\.key).map { Array($0.utf8) } == expectedOrder.map { Array($0.utf8) })
        for (index, key) in keys.enumerated() {
            #expect(encoded.value(forKey: key)?.integer == Int64(index), "key \(key.debugDescription)")
        }
        #expect(encoded.value(forKey: "e") == nil)
        #expect(encoded.value(forKey: "😀x") == nil)
        #expect(encoded.value(forKey: "b") == nil)
        #expect(encoded.decode() == .dictionary(entries))
    }

    @Test func sameDictionaryInAnyInsertionOrderEncodesToIdenticalBytes() throws {
        let keys = (0..<300).map { "key-\($0)-\(String(repeating: "é", count: $0 % 4))" } + ["😀", "", "Z"]
        func build(_ order: [String], capacity: Int) -> [String: Value] {
            var entries: [String: Value] = [:]
            entries.reserveCapacity(capacity)
            for key in order {
                entries[key] = .dictionary(["n": .string(key), "m": .array([.int(Int64(key.utf8.count))])])
            }
            return entries
        }
        var generator = SeededGenerator(seed: 42)
        let forward = build(keys, capacity: 0)
        let backward = build(keys.reversed(), capacity: 4096)
        let shuffled = build(keys.shuffled(using: &generator), capacity: 1000)
        #expect(forward == backward && backward == shuffled)
        // The premise: the dictionaries iterate in different orders.
        #expect(Array(forward.keys) != Array(backward.keys))

        let reference = try ValueEncoder.encode(.dictionary(forward))
        #expect(try ValueEncoder.encode(.dictionary(backward)) == reference)
        #expect(try ValueEncoder.encode(.dictionary(shuffled)) == reference)
    }

    @Test func documentsBuiltInDifferentOrdersHaveIdenticalBodies() throws {
        let first = MutableDocument(id: "x")
            .setString("one", forKey: "a").setInt(2, forKey: "b").setDouble(3.5, forKey: "c")
            .setDictionary(MutableDictionaryObject().setBoolean(true, forKey: "y").setValue(nil, forKey: "x"), forKey: "d")
        let second = MutableDocument(id: "x")
            .setDictionary(MutableDictionaryObject().setValue(nil, forKey: "x").setBoolean(true, forKey: "y"), forKey: "d")
            .setDouble(3.5, forKey: "c").setInt(2, forKey: "b").setString("one", forKey: "a")
        #expect(try first.encodeBody() == second.encodeBody())
    }

    @Test func oneKeyOfAThousandIsFoundWithoutDecodingTheOthers() throws {
        var entries: [String: Value] = [:]
        for index in 0..<1000 { entries[String(format: "key%04d", index)] = .int(Int64(index) * 1000) }
        var bytes = try ValueEncoder.encode(.dictionary(entries))
        let root = EncodedValue(bytes: bytes)
        #expect(root.count == 1000)
        for index in 0..<1000 {
            #expect(root.value(forKey: String(format: "key%04d", index))?.integer == Int64(index) * 1000)
        }
        for missing in ["", "key", "key0", "key1000", "key-001", "key0999x", "kez", "a", "zzz"] {
            #expect(root.value(forKey: missing) == nil, "\(missing)")
        }

        // Wreck every value except one: the lookup must still find it, so it reads nothing else.
        let target = "key0617"
        for (key, value) in root.entries where key != target { bytes[value.offset] = 0xEE }
        let damaged = EncodedValue(bytes: bytes)
        #expect(damaged.value(forKey: target)?.integer == 617_000)
        #expect(damaged.value(forKey: "key0616")?.integer == nil)
        #expect(damaged.value(forKey: "key0616")?.decode() == .null)
    }

    // MARK: - Round trip

    @Test func decodeRoundTripsEveryKindOfValue() throws {
        var generator = SeededGenerator(seed: 7)
        for _ in 0..<200 {
            let value = Self.randomValue(depth: 0, using: &generator)
            let bytes = try ValueEncoder.encode(value)
            let encoded = EncodedValue(bytes: bytes)
            #expect(encoded.decode() == value)
            #expect(encoded.encodedSize == bytes.count)
            #expect(try ValueEncoder.encode(encoded.decode()) == bytes)  // canonical: re-encoding is stable
        }
    }

    // MARK: - Damaged bytes

    @Test func emptyAndUnknownBytesReadAsMissing() {
        let empty = EncodedValue(bytes: [])
        #expect(empty.tag == nil)
        #expect(empty.decode() == .null)
        #expect(empty.count == 0 && empty.keys.isEmpty && empty.entries.isEmpty)
        #expect(empty.value(forKey: "a") == nil && empty.element(at: 0) == nil)
        #expect(empty.encodedSize == nil)
        #expect(empty.slice == [ValueTag.null])

        let unknown = EncodedValue(bytes: [0xEE, 1, 2, 3])
        #expect(unknown.decode() == .null)
        #expect(unknown.encodedSize == nil)

        let outOfRange = EncodedValue(bytes: [ValueTag.trueValue], offset: 5)
        #expect(outOfRange.tag == nil && outOfRange.decode() == .null)
        #expect(EncodedValue(bytes: [ValueTag.trueValue], offset: -1).tag == nil)
    }

    @Test func truncatedScalarsReadAsNull() {
        #expect(EncodedValue(bytes: [ValueTag.int8]).integer == nil)
        #expect(EncodedValue(bytes: [ValueTag.int8]).decode() == .null)
        #expect(EncodedValue(bytes: [ValueTag.int32, 1, 2]).decode() == .null)
        #expect(EncodedValue(bytes: [ValueTag.int64, 1, 2, 3, 4, 5, 6, 7]).decode() == .null)
        #expect(EncodedValue(bytes: [ValueTag.double, 0, 0, 0]).double == nil)
        #expect(EncodedValue(bytes: [ValueTag.double, 0, 0, 0]).decode() == .null)
        #expect(EncodedValue(bytes: [ValueTag.string, 10, 0x61]).string == nil)
        #expect(EncodedValue(bytes: [ValueTag.string, 10, 0x61]).decode() == .null)
        #expect(EncodedValue(bytes: [ValueTag.string, 2, 0]).decode() == .null)
        #expect(EncodedValue(bytes: [ValueTag.string, 0x80]).decode() == .null)  // unterminated varint
    }

    @Test func everyTruncationOfABodyReadsWithoutCrashing() throws {
        let value = Value.dictionary([
            "name": .string("Ann"), "age": .int(40_000), "tags": .array([.string("a"), .bool(true), .null]),
            "address": .dictionary(["city": .string("Zürich"), "zip": .int(8000)]), "score": .double(2.5),
        ])
        let bytes = try ValueEncoder.encode(value)
        for length in 0..<bytes.count {
            let prefix = Array(bytes[0..<length])
            exercise(EncodedValue(bytes: prefix))
            let document = Document(id: "d", revisionID: nil, sequence: 0, body: prefix)
            _ = document.toJSON()
            _ = document.toDictionary()
            _ = document.string(forKey: "name")
            _ = document["address"]["city"].string
        }
        // A body cut short never reads a value past its end.
        let half = EncodedValue(bytes: Array(bytes[0..<(bytes.count / 2)]))
        #expect(half.value(forKey: "tags")?.decode() != value["tags"])
    }

    @Test func hugeCountsDoNotAllocateOrLoop() {
        // An array claiming 4 billion elements in a 13-byte buffer.
        let array = EncodedValue(bytes: [ValueTag.array, 13, 0, 0, 0, 0xFF, 0xFF, 0xFF, 0xFF, 9, 0, 0, 0])
        #expect(array.count <= 1)
        _ = array.decode()
        let dictionary = EncodedValue(bytes: [
            ValueTag.dictionary, 17, 0, 0, 0, 0xFF, 0xFF, 0xFF, 0xFF,
            17, 0, 0, 0, 17, 0, 0, 0,
        ])
        #expect(dictionary.count <= 1)
        _ = dictionary.keys
        _ = dictionary.decode()
        #expect(dictionary.value(forKey: "a") == nil)
    }

    @Test func offsetsPointingBackAtTheirContainerDoNotRecurseForever() {
        // Array whose single element offset is 0: the array itself.
        let array = EncodedValue(bytes: [ValueTag.array, 13, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0])
        #expect(array.decode() == .array([.null]))
        #expect(array.element(at: 0) == nil)
        // Dictionary whose value offset is 0.
        let dictionary = EncodedValue(bytes: [
            ValueTag.dictionary, 22, 0, 0, 0, 1, 0, 0, 0, 17, 0, 0, 0, 0, 0, 0, 0,
            1, 0, 0, 0, UInt8(ascii: "a"),
        ])
        #expect(dictionary.value(forKey: "a") == nil)
        _ = dictionary.decode()
        _ = ValueConversion.plain(dictionary)
        // Dictionary whose value offset lands inside its own offset table.
        let intoTable = EncodedValue(bytes: [
            ValueTag.dictionary, 22, 0, 0, 0, 1, 0, 0, 0, 17, 0, 0, 0, 5, 0, 0, 0,
            1, 0, 0, 0, UInt8(ascii: "a"),
        ])
        _ = intoTable.decode()
    }

    @Test func randomlyDamagedBodiesNeverCrash() async throws {
        try await onAThreadOfItsOwn {
            var generator = SeededGenerator(seed: 2024)
            let value = Value.dictionary([
                "people": .array(
                    (0..<8).map { index in
                        .dictionary([
                            "name": .string("person \(index)"), "age": .int(Int64(index * 300)),
                            "pets": .array([.string("cat"), .double(Double(index) / 3)]),
                            "nested": .dictionary(["a": .dictionary(["b": .array([.null, .bool(true)])])]),
                        ])
                    }),
                "title": .string("a team"),
            ])
            let original = try ValueEncoder.encode(value)
            for _ in 0..<600 {
                var bytes = original
                for _ in 0..<Int.random(in: 1...4, using: &generator) {
                    bytes[Int.random(in: 0..<bytes.count, using: &generator)] = UInt8.random(in: 0...255, using: &generator)
                }
                exercise(EncodedValue(bytes: bytes))
            }
        }
    }

    // MARK: - Large documents

    @Test func tenMegabyteValueRoundTrips() async throws {
        try await onAThreadOfItsOwn {
            let value = Self.largeValue()
            let bytes = try ValueEncoder.encode(value)
            #expect(bytes.count > 10_000_000)
            let root = EncodedValue(bytes: bytes)
            #expect(root.value(forKey: "text")?.string?.utf8.count == 8_000_000)
            #expect(root.value(forKey: "numbers")?.element(at: 99_999)?.integer == Int64(99_999) * 99_999)
            #expect(root.value(forKey: "chunks")?.value(forKey: "chunk-0999")?.string?.hasPrefix("999:") == true)
            #expect(root.decode() == value)
        }
    }

    @Test func tenMegabyteDocumentIsSavedAndReadBack() async throws {
        try await onAThreadOfItsOwn {
            let value = Self.largeValue()
            guard case .dictionary(let entries) = value else { return }
            let expectedBody = try ValueEncoder.encode(value)
            try await withDatabase { database, directory in
                let document = MutableDocument(id: "big")
                for (key, entry) in entries { document.setValue(entry, forKey: key) }
                try await database.defaultCollection().save(document: document)
                #expect(try await database.defaultCollection().document(id: "big")?.body == expectedBody)

                // Read it back from disk through a fresh open.
                try await database.close()
                let reopened = try directory.open()
                do {
                    let stored = try #require(try await reopened.defaultCollection().document(id: "big"))
                    #expect(stored.body == expectedBody)
                    #expect(stored.string(forKey: "text")?.utf8.count == 8_000_000)
                    #expect(stored.array(forKey: "numbers")?.count == 100_000)
                    #expect(stored.array(forKey: "numbers")?.int64(at: 12_345) == Int64(12_345) * 12_345)
                    #expect(stored["chunks"]["chunk-0500"].string?.hasPrefix("500:") == true)
                    #expect(stored.dictionary(forKey: "chunks")?.count == 1000)
                    try await reopened.close()
                } catch {
                    try? await reopened.close()
                    throw error
                }
            }
        }
    }

    // MARK: - Helpers

    /// About 10.5 MB once encoded: one 8 MB string, 100 000 integers and 1000 strings of 1 KB.
    static func largeValue() -> Value {
        let text = String(repeating: "0123456789abcdef", count: 500_000)
        let numbers = Value.array((0..<100_000).map { .int(Int64($0) * Int64($0)) })
        var chunks: [String: Value] = [:]
        for index in 0..<1000 {
            let prefix = "\(index):"
            chunks[String(format: "chunk-%04d", index)] = .string(prefix + String(repeating: "é", count: 512))
        }
        return .dictionary(["text": .string(text), "numbers": numbers, "chunks": .dictionary(chunks)])
    }

    /// Walks every accessor of `encoded` and everything below it; results are ignored, only
    /// crashes matter.
    private func exercise(_ encoded: EncodedValue, depth: Int = 0) {
        _ = encoded.decode()
        _ = ValueConversion.plain(encoded)
        _ = JSON.string(from: encoded.decode())
        _ = encoded.slice
        _ = encoded.encodedSize
        _ = encoded.bool
        _ = encoded.integer
        _ = encoded.double
        _ = encoded.string
        _ = encoded.value(forKey: "name")
        _ = encoded.value(forKey: "people")
        _ = encoded.element(at: 0)
        _ = encoded.element(at: encoded.count - 1)
        guard depth < 8 else { return }
        for (_, value) in encoded.entries { exercise(value, depth: depth + 1) }
        for index in 0..<min(encoded.count, 16) {
            if let element = encoded.element(at: index) { exercise(element, depth: depth + 1) }
        }
    }

    static func randomValue(depth: Int, using generator: inout SeededGenerator) -> Value {
        let choice = Int.random(in: 0..<(depth < 3 ? 9 : 7), using: &generator)
        switch choice {
        case 0: return .null
        case 1: return .bool(Bool.random(using: &generator))
        case 2: return .int(Int64.random(in: -200...200, using: &generator))
        case 3:
            guard Bool.random(using: &generator) else { return .int(Int64.random(in: Int64.min...Int64.max, using: &generator)) }
            // An integer beyond Int64, as CouchDB keeps them.
            let digits = String(Int64.max) + String(Int.random(in: 0...999_999, using: &generator))
            return .largeInteger(LargeInteger(text: Bool.random(using: &generator) ? digits : "-" + digits)!)
        case 4: return .double(Double.random(in: -1e6...1e6, using: &generator))
        case 5, 6:
            let alphabet = Array("aZ0 é😀\u{301}\"\\\n")
            let length = Int.random(in: 0...12, using: &generator)
            return .string(String((0..<length).map { _ in alphabet.randomElement(using: &generator)! }))
        case 7:
            return .array(
                (0..<Int.random(in: 0...5, using: &generator)).map { _ in
                    randomValue(depth: depth + 1, using: &generator)
                })
        default:
            var entries: [String: Value] = [:]
            for _ in 0..<Int.random(in: 0...5, using: &generator) {
                let key = "k\(Int.random(in: 0...20, using: &generator))"
                entries[key] = randomValue(depth: depth + 1, using: &generator)
            }
            return .dictionary(entries)
        }
    }

    /// A deterministic random number generator (SplitMix64), so failures reproduce.
    struct SeededGenerator: RandomNumberGenerator {
        private var state: UInt64

        init(seed: UInt64) { state = seed }

        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
    }
}
