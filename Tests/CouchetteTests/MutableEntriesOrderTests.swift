import Foundation
import Testing

@testable import Couchette

/// `MutableEntries` keeps a dictionary's entries in stored key order, inserting a key that
/// arrives out of order by moving the later entries in memory: whatever order the setters come
/// in, the entries, their values and the encoding must be those of the sorted keys.
@Suite(.tags(.sanitizeAddress)) struct MutableEntriesOrderTests {
    @Test(arguments: [1, 2, 7, 40])
    func entriesStaySortedWhateverTheOrderOfTheSetters(count: Int) throws {
        var random = SystemRandomNumberGenerator()
        let keys = (0..<count).map { "key\(String(repeating: "z", count: $0 % 3))\($0)" }
        var expected: [String: Value] = [:]
        for _ in 0..<20 {
            let dictionary = MutableDictionaryObject()
            for (position, key) in keys.shuffled(using: &random).enumerated() {
                // Strings and arrays hold references: a wrong move would show as a wrong value
                // (or, under AddressSanitizer, a bad access).
                dictionary.setValue(position.isMultiple(of: 2) ? key + "!" as Any : [key, key] as Any, forKey: key)
                expected[key] = position.isMultiple(of: 2) ? .string(key + "!") : .array([.string(key), .string(key)])
            }
            let stored = dictionary.changedEntries.map(\.key)
            #expect(stored == ValueEncoder.sortedKeys(keys))
            var encoder = ValueEncoder()
            try dictionary.encode(into: &encoder)
            #expect(encoder.bytes == (try ValueEncoder.encode(.dictionary(expected))))
        }
    }

    @Test func replacingAndRemovingKeepTheOrder() throws {
        let dictionary = MutableDictionaryObject()
        for key in ["m", "c", "x", "a", "q"] { dictionary.setString(key, forKey: key) }
        dictionary.setInt(1, forKey: "c").removeValue(forKey: "x").setString("b", forKey: "b")
        #expect(dictionary.changedEntries.map(\.key) == ["a", "b", "c", "m", "q"])
        #expect(dictionary.int(forKey: "c") == 1)
        #expect(dictionary.string(forKey: "m") == "m")
    }
}
