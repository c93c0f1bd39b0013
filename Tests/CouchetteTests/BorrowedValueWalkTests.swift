import Testing

@testable import Couchette

/// The header reads every walk over stored bytes makes per container and per child
/// (``BorrowedValue/layout``, ``BorrowedValue/fits(within:)``) give what the plain definitions
/// give, on valid and on random (hostile) bytes, at every offset.
@Suite(.tags(.sanitizeAddress)) struct BorrowedValueWalkTests {
    /// Valid encodings of every kind, then random bytes with container tags sprinkled in.
    private static func buffers() throws -> [[UInt8]] {
        var random = SystemRandomNumberGenerator()
        var buffers = try [
            Value.dictionary(["a": .int(1), "bb": .string("x"), "list": .array([.null, .bool(true), .double(2.5)])]),
            .array((0..<300).map { .string("item \($0)") }), .string(String(repeating: "z", count: 200)),
            .int(Int64.min), .dictionary([:]), .array([]),
        ].map { try ValueEncoder.encode($0) }
        for length in [0, 1, 2, 3, 5, 8, 9, 16, 40, 200] {
            for _ in 0..<40 {
                var bytes = (0..<length).map { _ in UInt8.random(in: 0...255, using: &random) }
                for index in bytes.indices where Bool.random(using: &random) {
                    bytes[index] = UInt8.random(in: ValueTag.null...ValueTag.largeInteger, using: &random)
                }
                buffers.append(bytes)
            }
        }
        return buffers
    }

    @Test func fitsWithinAgreesWithTheEncodedSize() throws {
        for bytes in try Self.buffers() {
            bytes.withUnsafeBytes { buffer in
                for offset in -1...buffer.count {
                    let value = BorrowedValue(buffer: buffer, offset: offset, depth: 0)
                    for room in [-1, 0, 1, 2, 3, 5, 9, 10, 64, 300, 70_000] {
                        #expect(value.fits(within: room) == ((value.encodedSize ?? 0) <= room), "\(bytes) at \(offset), room \(room)")
                    }
                }
            }
        }
    }

    @Test func layoutReadsTheHeaderAndCapsTheCountAtTheSlotsTheBytesHold() throws {
        for bytes in try Self.buffers() {
            bytes.withUnsafeBytes { buffer in
                for offset in -1...buffer.count {
                    let value = BorrowedValue(buffer: buffer, offset: offset, depth: 0)
                    #expect(
                        value.layout.map(Self.fields) ?? [] == Self.expectedLayout(value).map(Self.fields) ?? [], "\(bytes) at \(offset)")
                }
                let deep = BorrowedValue(buffer: buffer, offset: 0, depth: ValueEncoder.maximumDepth)
                #expect(deep.layout == nil)
            }
        }
    }

    private static func fields(_ layout: BorrowedValue.Layout) -> [Int?] {
        [layout.isDictionary ? 1 : 0, layout.width, layout.header, layout.count, layout.slots, layout.size]
    }

    /// The layout as the format defines it, field by field through ``BorrowedValue/unsigned(at:width:)``.
    private static func expectedLayout(_ value: BorrowedValue) -> BorrowedValue.Layout? {
        guard let tag = value.tag else { return nil }
        let dictionary = tag == ValueTag.dictionary || tag == ValueTag.narrowDictionary
        let narrow = tag == ValueTag.narrowArray || tag == ValueTag.narrowDictionary
        guard dictionary || narrow || tag == ValueTag.array else { return nil }
        let width = narrow ? 2 : 4
        let header = 1 + 2 * width
        guard let stored = value.unsigned(at: value.offset + 1 + width, width: width) else { return nil }
        let perEntry = dictionary ? 2 : 1
        let count = min(stored, max(0, (value.buffer.count - value.offset - header) / (width * perEntry)))
        let size = value.unsigned(at: value.offset + 1, width: width).flatMap { $0 <= value.buffer.count - value.offset ? $0 : nil }
        return BorrowedValue.Layout(
            isDictionary: dictionary, width: width, header: header, count: count, slots: count * perEntry, size: size)
    }
}
