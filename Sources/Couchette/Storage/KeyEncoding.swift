/// Byte-level helpers for building LMDB keys whose byte order equals their logical order.
///
/// LMDB compares keys with `memcmp`, so integers are stored big-endian and composite keys are the
/// concatenation of their parts, with variable-length parts last.
enum KeyEncoding {
    static func appendUInt32(_ value: UInt32, to bytes: inout [UInt8]) {
        withUnsafeBytes(of: value.bigEndian) { bytes.append(contentsOf: $0) }
    }

    static func appendUInt64(_ value: UInt64, to bytes: inout [UInt8]) {
        withUnsafeBytes(of: value.bigEndian) { bytes.append(contentsOf: $0) }
    }

    static func readUInt32(_ bytes: UnsafeRawBufferPointer, at offset: Int) -> UInt32 {
        var value: UInt32 = 0
        for index in offset..<offset + 4 { value = value << 8 | UInt32(bytes[index]) }
        return value
    }

    static func readUInt64(_ bytes: UnsafeRawBufferPointer, at offset: Int) -> UInt64 {
        var value: UInt64 = 0
        for index in offset..<offset + 8 { value = value << 8 | UInt64(bytes[index]) }
        return value
    }

    /// `prefix` followed by the UTF-8 bytes of `string`.
    static func key(_ prefix: [UInt8], _ string: String) -> [UInt8] {
        var key = prefix
        key.append(contentsOf: string.utf8)
        return key
    }

    /// The smallest key greater than every key that starts with `prefix`, or nil when none exists.
    static func successor(ofPrefix prefix: [UInt8]) -> [UInt8]? {
        var bytes = prefix
        while let last = bytes.last {
            if last < 0xFF {
                bytes[bytes.count - 1] = last + 1
                return bytes
            }
            bytes.removeLast()
        }
        return nil
    }
}
