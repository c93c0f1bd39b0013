import Testing

@testable import Couchette

/// A property lookup may start at a hinted entry (where a read of the document found the key
/// before it was set): whatever the hint — right, wrong, stale, out of range — it finds exactly
/// what the plain binary search finds, and an update whose save starts at the hint stores the
/// bytes a whole encoding gives.
@Suite struct HintedKeyLookupTests {
    private static let keys = ["a", "birthday", "contact", "gender", "likes", "memberSince", "name", "visits", "zz", "é"]

    /// A dictionary of the first `count` keys, with values of different kinds and sizes.
    private static func dictionary(_ count: Int, seed: Int) -> [String: Value] {
        var values: [String: Value] = [:]
        for (index, key) in keys.prefix(count).enumerated() {
            switch (index + seed) % 4 {
            case 0: values[key] = .int(Int64(index * 1000 + seed))
            case 1: values[key] = .string(String(repeating: "x", count: index + seed % 7))
            case 2: values[key] = .dictionary(["inner": .int(Int64(seed))])
            default: values[key] = .array([.bool(true), .null])
            }
        }
        return values
    }

    @Test func everyHintFindsWhatTheSearchFinds() throws {
        for count in 0...Self.keys.count {
            for seed in 0..<4 {
                let encoded = EncodedValue(bytes: try ValueEncoder.encode(.dictionary(Self.dictionary(count, seed: seed))))
                let probes = Self.keys + ["", "b", "visit", "visitss", "zzz", "0"]
                for key in probes {
                    let expected = encoded.value(forKey: key)
                    for hint in [-5, -1, Int.max, Int.min] + Array(-1...(count + 1)) {
                        let found = encoded.entry(forKey: key, near: hint)
                        #expect(found?.value.offset == expected?.offset, "\(key) at hint \(hint) of \(count) keys")
                        if let found { #expect(encoded.keys[found.index] == key) }
                    }
                }
            }
        }
    }

    @Test func damagedBytesNeverMisleadAHintedLookup() throws {
        let body = try ValueEncoder.encode(.dictionary(Self.dictionary(Self.keys.count, seed: 1)))
        var random = SystemRandomNumberGenerator()
        for _ in 0..<2000 {
            var damaged = body
            for _ in 0..<3 { damaged[Int.random(in: 0..<damaged.count, using: &random)] = UInt8.random(in: 0...255, using: &random) }
            let encoded = EncodedValue(bytes: damaged)
            for key in Self.keys {
                // Any answer must be an intact entry named `key`.
                guard let found = encoded.entry(forKey: key, near: Int.random(in: -1...Self.keys.count, using: &random)) else { continue }
                var named: String?
                encoded.withBorrowed { borrowed in
                    var index = 0
                    borrowed.forEachEntry { name, value in
                        if value.offset == found.value.offset { named = name }
                        index += 1
                    }
                }
                #expect(named == key)
            }
        }
    }

    @Test func anUpdateAfterAnyReadStoresTheWholeEncoding() throws {
        let values = Self.dictionary(Self.keys.count, seed: 0)
        let body = try ValueEncoder.encode(.dictionary(values))
        let integerKeys = values.filter { if case .int = $0.value { true } else { false } }.map(\.key)
        for read in Self.keys + ["missing"] {
            for written in integerKeys {
                let document = Document(id: "d", revision: nil, sequence: 1, body: body)
                _ = document.int(forKey: read)  // leaves its entry as the hint
                _ = document.string(forKey: read)
                let edit = document.toMutable().setInt(document.int(forKey: read) &+ 7, forKey: written)
                var expected = values
                expected[written] = .int(Int64(document.int(forKey: read) &+ 7))
                // Same size as the old value: the body is patched in place, from the hint.
                #expect(try edit.encodeBody() == ValueEncoder.encode(.dictionary(expected)), "read \(read), wrote \(written)")
                // Reading the edit moves its own hint; its next save is still right.
                _ = edit.value(forKey: read)
                edit.setInt(3, forKey: written)
                expected[written] = .int(3)
                #expect(try edit.encodeBody() == ValueEncoder.encode(.dictionary(expected)), "read \(read), wrote \(written) again")
            }
        }
    }

    @Test func aCopyMadeBeforeTheReadStoresTheWholeEncoding() throws {
        let values = Self.dictionary(Self.keys.count, seed: 0)
        let body = try ValueEncoder.encode(.dictionary(values))
        for key in Self.keys {
            guard case .int(let old) = values[key] else { continue }
            let document = Document(id: "d", revision: nil, sequence: 1, body: body)
            // The receiver is evaluated first: the copy exists before the read that sets the hint.
            let edit = document.toMutable().setInt(document.int(forKey: key) + 1, forKey: key)
            var expected = values
            expected[key] = .int(old + 1)
            #expect(try edit.encodeBody() == ValueEncoder.encode(.dictionary(expected)), "\(key)")
        }
    }

    @Test func aNestedEditAfterAReadStoresTheWholeEncoding() throws {
        let values: [String: Value] = [
            "a": .int(1), "contact": .dictionary(["city": .string("Boise"), "zip": .int(83702)]), "visits": .int(9),
        ]
        let document = Document(id: "d", revision: nil, sequence: 1, body: try ValueEncoder.encode(.dictionary(values)))
        _ = document.int(forKey: "visits")
        let edit = document.toMutable()
        edit.dictionary(forKey: "contact")?.setInt(83703, forKey: "zip")
        edit.setInt(10, forKey: "visits")
        let expected: [String: Value] = [
            "a": .int(1), "contact": .dictionary(["city": .string("Boise"), "zip": .int(83703)]), "visits": .int(10),
        ]
        #expect(try edit.encodeBody() == ValueEncoder.encode(.dictionary(expected)))
    }
}
