import Foundation
import Testing

@testable import Couchette

/// String values of up to 15 bytes come from a per-thread table of the strings made lately
/// (``ShortStrings``) when a document converts to `[String: Any]`: a hit must give exactly the
/// string the stored bytes make, whatever else the table held.
@Suite(.tags(.sanitizeAddress)) struct ShortStringTests {
    private static func converted(_ body: [UInt8]) -> [String: Any] {
        Document(id: "d", revisionID: nil, sequence: 0, body: body).toDictionary()
    }

    /// Strings of every length around the limit and the word boundary, ASCII and not, strings that
    /// differ only by a trailing NUL or by a byte past the eighth, each converted several times in
    /// turn with the others.
    @Test func stringsNearTheLimitConvertToThemselves() throws {
        var texts = ["", "\0", "\0\0", "a", "a\0", "é", "e\u{301}", "\u{1F600}", "12345678", "123456780", "123456781"]
        for length in 1...17 { texts.append(String(repeating: "x", count: length)) }
        texts.append(String(repeating: "ü", count: 7))  // 14 bytes
        texts.append(String(repeating: "ü", count: 8))  // 16 bytes: made as usual
        let bodies = try texts.map {
            try ValueEncoder.encode(.dictionary(["s": .string($0), "list": .array([.string($0), .string($0)])]))
        }
        for round in 0..<4 {
            for (text, body) in zip(texts, bodies) {
                let plain = Self.converted(body)
                #expect(plain["s"] as? String == text, "round \(round): \(Array(text.utf8))")
                #expect((plain["list"] as? [Any])?.compactMap { $0 as? String } == [text, text], "round \(round)")
            }
        }
    }

    /// Ill-formed UTF-8 in a stored string (damaged or hand-made bytes) is repaired the same way
    /// when the table has the bytes as when it makes them.
    @Test func illFormedBytesAreRepairedTheSameOnAHit() throws {
        var body = try ValueEncoder.encode(.dictionary(["s": .string("abcXYZ")]))
        let position = try #require(body.firstIndex(of: UInt8(ascii: "X")))
        body[position] = 0xFF
        body[position + 1] = 0xC3
        let expected = String(decoding: [UInt8]("abc".utf8) + [0xFF, 0xC3] + [UInt8("Z".utf8.first!)], as: UTF8.self)
        for _ in 0..<3 { #expect(Self.converted(body)["s"] as? String == expected) }
    }

    /// More distinct strings than the table has slots, then the first ones again: slots replaced
    /// in between never give another string's value.
    @Test func replacedSlotsGiveTheirNewStrings() throws {
        let texts = (0..<(4 * ShortStrings.slotCount)).map { "v\($0)" }
        let bodies = try texts.map { try ValueEncoder.encode(.dictionary(["s": .string($0)])) }
        for _ in 0..<2 {
            for (text, body) in zip(texts, bodies) { #expect(Self.converted(body)["s"] as? String == text) }
        }
    }
}
