import Testing

@testable import Couchette

/// Stored records are read with ``ByteReader``: integers of every width, little-endian, at any
/// (unaligned) position, and bytes that run out (or a position outside them) throw `.corruption`
/// instead of reading past the buffer.
@Suite struct ByteReaderTests {
    @Test func integersOfEveryWidthReadLittleEndianAtAnyPosition() throws {
        let bytes: [UInt8] = (0..<40).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 11) }
        func expected<T: FixedWidthInteger>(_ type: T.Type, at position: Int) -> T {
            var value: T = 0
            for index in (0..<MemoryLayout<T>.size).reversed() { value = value << 8 | T(truncatingIfNeeded: bytes[position + index]) }
            return value
        }
        try bytes.withUnsafeBytes { (buffer: UnsafeRawBufferPointer) throws in
            for start in 0..<(bytes.count - 8) {
                var reader = ByteReader(bytes: buffer)
                reader.position = start
                #expect(try reader.read(UInt8.self) == expected(UInt8.self, at: start))
                #expect(try reader.read(UInt16.self) == expected(UInt16.self, at: start + 1))
                reader.position = start
                #expect(try reader.read(UInt32.self) == expected(UInt32.self, at: start))
                #expect(try reader.read(Int32.self) == expected(Int32.self, at: start + 4))
                reader.position = start
                #expect(try reader.read(UInt64.self) == expected(UInt64.self, at: start))
                #expect(reader.position == start + 8)
                reader.position = start
                #expect(try reader.read(Int64.self) == expected(Int64.self, at: start))
            }
        }
    }

    @Test func bytesThatRunOutThrowInsteadOfReadingPastThem() throws {
        let bytes: [UInt8] = [1, 2, 3, 4, 5, 6, 7]
        bytes.withUnsafeBytes { buffer in
            for start in 0...bytes.count {
                var reader = ByteReader(bytes: buffer)
                reader.position = start
                #expect(throws: CouchetteError.self) { try reader.read(UInt64.self) }
                #expect(reader.position == start, "a failed read moves nothing")
            }
            var reader = ByteReader(bytes: buffer)
            reader.position = -1
            #expect(throws: CouchetteError.self) { try reader.read(UInt8.self) }
            reader.position = 3
            #expect((try? reader.read(UInt32.self)) == 0x0706_0504 as UInt32?)
            #expect(throws: CouchetteError.self) { try reader.read(UInt8.self) }
        }
    }
}
