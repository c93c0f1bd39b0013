import Foundation
import Testing

@testable import Couchette

/// An integer set over a stored integer of the same encoded width (a counter incremented) is
/// written over its stored bytes without an encoder; the body must equal a full encoding, and a
/// value of another width must still take the full encoding.
@Suite(.tags(.sanitizeAddress)) struct IntegerPatchTests {
    /// Values at and around each width's edges, negative ones included.
    private static let edges: [Int64] = [
        0, 1, -1, 127, 128, -128, -129, 255, 256, 32_767, 32_768, -32_768, -32_769, 65_535, 65_536,
        2_147_483_647, 2_147_483_648, -2_147_483_648, -2_147_483_649, .max, .min, .max - 1, .min + 1,
    ]

    @Test(arguments: edges) func integersReplacedAtEveryWidthEncodeLikeAFullEncoding(stored: Int64) throws {
        let original = Value.dictionary(["a": .string("before"), "n": .int(stored), "z": .int(stored)])
        let document = Document(id: "d", revisionID: nil, sequence: 0, body: try ValueEncoder.encode(original))
        for replacement in Self.edges {
            let edit = document.toMutable().setInt64(replacement, forKey: "n")
            let expected = try ValueEncoder.encode(.dictionary(["a": .string("before"), "n": .int(replacement), "z": .int(stored)]))
            #expect(try edit.encodeBody() == expected, "\(stored) → \(replacement)")
            // Same width: patched in place; another width: no patch (the full encoding instead).
            let sameWidth = try ValueEncoder.encode(.int(stored)).count == ValueEncoder.encode(.int(replacement)).count
            #expect((edit.root.patchedBody != nil) == sameWidth, "\(stored) → \(replacement)")
        }
    }

    /// An integer set over a stored value of another type but the same size is not patched as
    /// an integer of that size would be: the tag is written too, so the bytes still match.
    @Test func anIntegerOverAnotherTypeOfTheSameSize() throws {
        let original = Value.dictionary(["f": .bool(true), "s": .string("abcd"), "x": .double(1.5)])
        let document = Document(id: "d", revisionID: nil, sequence: 0, body: try ValueEncoder.encode(original))
        for key in ["f", "s", "x"] {
            for number in [Int64(5), 300, 70_000, 5_000_000_000] {
                let edit = document.toMutable().setInt64(number, forKey: key)
                guard case .dictionary(var entries) = original else { return }
                entries[key] = .int(number)
                #expect(try edit.encodeBody() == ValueEncoder.encode(.dictionary(entries)), "\(key) = \(number)")
            }
        }
    }
}
