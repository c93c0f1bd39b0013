import Foundation
import Testing

@testable import Couchette

/// A conversion to `[String: Any]` first tries the shape the same place had last time (the last
/// top-level dictionary's, the dictionary under the same key of the parent's shape, the previous
/// element's of an array) and compares its keys while it walks the entries; only a mismatch
/// computes a fingerprint (``DictionaryShapes``). Whatever the hints name, every result must equal
/// the decoded body.
@Suite(.tags(.sanitizeAddress)) struct ShapeHintTests {
    /// The conversion of `body` on this thread, checked against its decoded `Value` (an independent walk).
    @discardableResult
    private static func expectConverts(_ body: [UInt8], _ comment: Comment? = nil) throws -> [String: Any] {
        let document = Document(id: "d", revisionID: nil, sequence: 0, body: body)
        let plain = document.toDictionary()
        #expect(ReadOwnershipTests.same(try ValueConversion.strict(plain), document.root.decode()), comment)
        return plain
    }

    private static func fingerprints() -> Int { DictionaryShapes.current?.fingerprintsComputed ?? -1 }

    private static func person(_ number: Int, address: Value, tags: Value = .array([])) -> Value {
        .dictionary([
            "name": .dictionary(["first": .string("Ann \(number)"), "last": .string("Lee")]),
            "contact": .dictionary(["address": address, "email": .array([.string("ann\(number)@example.com")])]),
            "tags": tags, "visits": .int(Int64(number)),
        ])
    }

    /// Documents of one shape, nested dictionaries and arrays of them included: after two of them
    /// every shape is kept (the nested ones as soon as the top level's), and converting another
    /// computes no fingerprint at all.
    @Test func documentsLikeThePreviousOneComputeNoFingerprint() throws {
        let bodies = try (0..<6).map { number in
            try ValueEncoder.encode(
                Self.person(
                    number, address: .dictionary(["city": .string("c\(number)"), "zip": .string("\(number)")]),
                    tags: .array([
                        .dictionary(["tag": .string("t\(number)"), "weight": .int(1)]),
                        .dictionary(["tag": .string("u"), "weight": .int(2)]),
                    ])))
        }
        for body in bodies.prefix(2) { try Self.expectConverts(body) }
        let before = Self.fingerprints()
        #expect(before >= 0)
        for (number, body) in bodies.enumerated().dropFirst(2) {
            let plain = try Self.expectConverts(body)
            #expect(((plain["contact"] as? [String: Any])?["address"] as? [String: Any])?["city"] as? String == "c\(number)")
        }
        #expect(Self.fingerprints() == before)
    }

    /// The nested dictionary under one key changes its key set from document to document while the
    /// parent's stays: the hint names the other shape, whose keys must not be lent.
    @Test func nestedKeySetsThatChangeUnderAStableParentConvertTheSame() throws {
        let addresses: [Value] = [
            .dictionary(["city": .string("a"), "zip": .string("1")]),
            .dictionary(["city": .string("b"), "zap": .string("2")]),
            .dictionary(["city": .string("c"), "zip": .string("3"), "state": .string("CA")]),
            .dictionary(["citz": .string("d"), "zip": .string("4")]),
            .string("not a dictionary"),
            .dictionary([:]),
        ]
        for round in 0..<5 {
            for (number, address) in addresses.enumerated() {
                let plain = try Self.expectConverts(
                    try ValueEncoder.encode(Self.person(number, address: address)), "round \(round), \(number)")
                let converted = (plain["contact"] as? [String: Any])?["address"]
                if case .dictionary(let entries) = address {
                    #expect(Set(((converted as? [String: Any]) ?? [:]).keys) == Set(entries.keys), "round \(round), \(number)")
                } else {
                    #expect(converted as? String == "not a dictionary")
                }
            }
        }
    }

    /// An array whose dictionary elements alternate between key sets (equal counts, one key apart):
    /// each element gets its own keys.
    @Test func arraysOfDictionariesOfAlternatingShapesConvertTheSame() throws {
        func element(_ index: Int) -> Value {
            let number = Value.int(Int64(index))
            switch index % 3 {
            case 0: return .dictionary(["tag": .string("t\(index)"), "weight": number])
            case 1: return .dictionary(["tag": .string("t\(index)"), "height": number])
            default: return .array([number])
            }
        }
        let elements = (0..<12).map(element)
        for round in 0..<4 {
            let plain = try Self.expectConverts(
                try ValueEncoder.encode(Self.person(round, address: .null, tags: .array(elements))), "round \(round)")
            let tags = try #require(plain["tags"] as? [Any])
            for (index, tag) in tags.enumerated() where index % 3 != 2 {
                let keys = Set(((tag as? [String: Any]) ?? [:]).keys)
                #expect(keys == (index % 3 == 0 ? ["tag", "weight"] : ["tag", "height"]), "round \(round), element \(index)")
            }
        }
    }

    /// More key sets than the cache keeps, each converted a few times between conversions of one
    /// document: hints keep naming slots whose shape was replaced since, and the document and
    /// every key set still convert to their own values.
    @Test func hintsToReplacedShapesConvertTheSame() throws {
        let steady = try ValueEncoder.encode(Self.person(1, address: .dictionary(["city": .string("x"), "zip": .string("9")])))
        for set in 0..<(3 * DictionaryShapes.slotCount) {
            let nested = Value.dictionary(["k\(set)": .int(Int64(set)), "inner": .dictionary(["v\(set % 7)": .bool(true)])])
            let body = try ValueEncoder.encode(.dictionary(["set": nested, "n": .int(Int64(set))]))
            for _ in 0..<3 { try Self.expectConverts(body, "set \(set)") }
            try Self.expectConverts(steady, "steady after set \(set)")
        }
    }
}
