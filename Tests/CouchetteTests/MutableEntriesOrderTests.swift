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

    /// Keys alike in their first eight bytes (whose prefixes tie), NUL bytes (which the prefix's
    /// padding looks like), and multi-byte characters (ordered by bytes, not by characters).
    @Test func keysWhosePrefixesTieAreOrderedByTheirBytes() throws {
        let keys = ["abcdefgh", "abcdefgh1", "abcdefgh\u{0}", "abcdefg", "ab", "ab\u{0}", "é", "e\u{301}", "z", "", "abcdefgi"]
        var random = SystemRandomNumberGenerator()
        for _ in 0..<20 {
            let dictionary = MutableDictionaryObject()
            for key in keys.shuffled(using: &random) { dictionary.setString(key, forKey: key) }
            #expect(dictionary.changedEntries.map(\.key) == ValueEncoder.sortedKeys(keys))
            for key in keys { #expect(dictionary.string(forKey: key) == key) }
        }
        // (A Swift dictionary would merge the two spellings of "é".)
        let distinct = keys.filter { !$0.utf8.elementsEqual("e\u{301}".utf8) }
        let data = Dictionary(uniqueKeysWithValues: distinct.map { ($0, $0 as Any) })
        #expect(MutableDictionaryObject(data: data).changedEntries.map(\.key) == ValueEncoder.sortedKeys(distinct))
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
