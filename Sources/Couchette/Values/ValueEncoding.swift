/// The binary format of document bodies: compact, and readable one property at a time.
///
/// Every value starts with a one-byte tag. Multi-byte numbers are little-endian.
///
/// | tag    | value      | payload                                                               |
/// |--------|------------|-----------------------------------------------------------------------|
/// | `0x00` | null       | —                                                                     |
/// | `0x01` | false      | —                                                                     |
/// | `0x02` | true       | —                                                                     |
/// | `0x03` | integer    | 1 byte, signed                                                        |
/// | `0x04` | integer    | 2 bytes, signed                                                       |
/// | `0x05` | integer    | 4 bytes, signed                                                       |
/// | `0x06` | integer    | 8 bytes, signed                                                       |
/// | `0x07` | double     | 8 bytes, IEEE 754 (never NaN or infinite)                              |
/// | `0x08` | string     | u32 byte count, then UTF-8 bytes                                      |
/// | `0x09` | array      | u32 total size, u32 count, count × u32 element offset, then elements  |
/// | `0x0A` | dictionary | u32 total size, u32 count, count × (u32 key offset, u32 value offset), then keys (u32 length + UTF-8) and values |
///
/// Offsets are measured from the container's tag byte; "total size" counts the whole container from
/// its tag, so a container can be copied or skipped without being read. Dictionary entries are
/// sorted by the UTF-8 bytes of their keys, which makes the encoding canonical (equal values encode
/// to equal bytes — revision digests rely on it) and lets a reader find one key by binary search
/// without decoding anything else (see ``EncodedValue``).
enum ValueTag {
    static let null: UInt8 = 0x00
    static let falseValue: UInt8 = 0x01
    static let trueValue: UInt8 = 0x02
    static let int8: UInt8 = 0x03
    static let int16: UInt8 = 0x04
    static let int32: UInt8 = 0x05
    static let int64: UInt8 = 0x06
    static let double: UInt8 = 0x07
    static let string: UInt8 = 0x08
    static let array: UInt8 = 0x09
    static let dictionary: UInt8 = 0x0A

    /// Bytes before the first offset slot of a container: tag, total size, count.
    static let containerHeaderSize = 9
}

/// Writes ``Value``s in the binary format described by ``ValueTag``.
struct ValueEncoder {
    private(set) var bytes: [UInt8] = []

    /// Encodes `value`, rejecting NaN and infinities with `.invalidParameter` naming the key path.
    static func encode(_ value: Value) throws -> [UInt8] {
        var encoder = ValueEncoder()
        try encoder.write(value, path: "")
        return encoder.bytes
    }

    mutating func write(_ value: Value, path: String) throws {
        switch value {
        case .null: bytes.append(ValueTag.null)
        case .bool(let flag): bytes.append(flag ? ValueTag.trueValue : ValueTag.falseValue)
        case .int(let number): writeInteger(number)
        case .double(let number):
            guard number.isFinite else {
                throw CouchetteError(.invalidParameter,
                                     "value \(number) at '\(path.isEmpty ? "(root)" : path)' cannot be stored: JSON has no NaN or infinity")
            }
            bytes.append(ValueTag.double)
            appendLittleEndian(number.bitPattern)
        case .string(let text):
            bytes.append(ValueTag.string)
            appendString(text)
        case .array(let elements):
            let start = beginContainer(ValueTag.array, count: elements.count, slotSize: 4)
            for (index, element) in elements.enumerated() {
                patch(UInt32(bytes.count - start), at: start + ValueTag.containerHeaderSize + index * 4)
                try write(element, path: "\(path)[\(index)]")
            }
            patch(UInt32(bytes.count - start), at: start + 1)
        case .dictionary(let entries):
            let sorted = entries.map { (Array($0.key.utf8), $0.key, $0.value) }
                .sorted { $0.0.lexicographicallyPrecedes($1.0) }
            let start = beginContainer(ValueTag.dictionary, count: sorted.count, slotSize: 8)
            for (index, entry) in sorted.enumerated() {
                let slot = start + ValueTag.containerHeaderSize + index * 8
                patch(UInt32(bytes.count - start), at: slot)
                appendLittleEndian(UInt32(entry.0.count))
                bytes.append(contentsOf: entry.0)
                patch(UInt32(bytes.count - start), at: slot + 4)
                try write(entry.2, path: path.isEmpty ? entry.1 : "\(path).\(entry.1)")
            }
            patch(UInt32(bytes.count - start), at: start + 1)
        }
    }

    private mutating func beginContainer(_ tag: UInt8, count: Int, slotSize: Int) -> Int {
        let start = bytes.count
        bytes.append(tag)
        appendLittleEndian(UInt32(0))
        appendLittleEndian(UInt32(count))
        bytes.append(contentsOf: repeatElement(0, count: count * slotSize))
        return start
    }

    private mutating func writeInteger(_ number: Int64) {
        if let small = Int8(exactly: number) {
            bytes.append(ValueTag.int8)
            bytes.append(UInt8(bitPattern: small))
        } else if let medium = Int16(exactly: number) {
            bytes.append(ValueTag.int16)
            appendLittleEndian(medium)
        } else if let large = Int32(exactly: number) {
            bytes.append(ValueTag.int32)
            appendLittleEndian(large)
        } else {
            bytes.append(ValueTag.int64)
            appendLittleEndian(number)
        }
    }

    private mutating func appendString(_ text: String) {
        let utf8 = text.utf8
        appendLittleEndian(UInt32(utf8.count))
        bytes.append(contentsOf: utf8)
    }

    private mutating func appendLittleEndian<T: FixedWidthInteger>(_ number: T) {
        withUnsafeBytes(of: number.littleEndian) { bytes.append(contentsOf: $0) }
    }

    private mutating func patch(_ number: UInt32, at offset: Int) {
        withUnsafeBytes(of: number.littleEndian) { raw in
            for index in 0..<4 { bytes[offset + index] = raw[index] }
        }
    }
}
