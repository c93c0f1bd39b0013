/// Bounds-checked little-endian reading of stored records; damaged bytes throw `.corruption`.
struct ByteReader {
    let bytes: UnsafeRawBufferPointer
    var position = 0

    mutating func read<T: FixedWidthInteger>(_ type: T.Type) throws -> T {
        let size = MemoryLayout<T>.size
        guard position >= 0, position + size <= bytes.count else { throw truncated() }
        // One load of the bytes just checked (a record header is read per document read, and byte
        // by byte, each subscript checked again, it cost several times as much).
        let value = T(littleEndian: bytes.loadUnaligned(fromByteOffset: position, as: T.self))
        position += size
        return value
    }

    mutating func bytes(length: Int) throws -> [UInt8] {
        guard length >= 0, position + length <= bytes.count else { throw truncated() }
        defer { position += length }
        return Array(bytes[position..<(position + length)])
    }

    mutating func string(length: Int) throws -> String {
        String(decoding: try bytes(length: length), as: UTF8.self)
    }

    /// A LEB128 varint no larger than `limit`.
    mutating func varint(limit: UInt64) throws -> UInt64 {
        var value: UInt64 = 0
        var shift: UInt64 = 0
        while true {
            let byte = try read(UInt8.self)
            guard shift < 64, shift < 63 || byte & 0x7F <= 1 else {
                throw CouchetteError(.corruption, "stored record has an over-long number at byte \(position)")
            }
            value |= UInt64(byte & 0x7F) << shift
            if byte & 0x80 == 0 { break }
            shift += 7
        }
        guard value <= limit else {
            throw CouchetteError(.corruption, "stored record has \(value) where at most \(limit) fits, at byte \(position)")
        }
        return value
    }

    /// Everything not read yet.
    mutating func rest() -> [UInt8] {
        defer { position = bytes.count }
        return Array(bytes[position...])
    }

    private func truncated() -> CouchetteError {
        CouchetteError(.corruption, "stored record is truncated at byte \(position) of \(bytes.count)")
    }
}
