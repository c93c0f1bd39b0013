/// A value inside an encoded body (see ``ValueTag``), read lazily.
///
/// Looking up one property costs a binary search over the dictionary's offset table; nothing else
/// of the body is decoded. Reads are bounds-checked: damaged bytes read as MISSING, never crash.
struct EncodedValue: Sendable {
    let bytes: [UInt8]
    let offset: Int

    init(bytes: [UInt8], offset: Int = 0) {
        self.bytes = bytes
        self.offset = offset
    }

    var tag: UInt8? { offset >= 0 && offset < bytes.count ? bytes[offset] : nil }

    var isDictionary: Bool { tag == ValueTag.dictionary }
    var isArray: Bool { tag == ValueTag.array }

    // MARK: - Containers

    /// Number of elements or entries of a container, 0 for anything else. A damaged count is
    /// capped at the number of offset slots the bytes can hold.
    var count: Int {
        guard tag == ValueTag.array || tag == ValueTag.dictionary, let stored = uint32(at: offset + 5) else { return 0 }
        let slotSize = tag == ValueTag.array ? 4 : 8
        return min(Int(stored), max(0, (bytes.count - offset - ValueTag.containerHeaderSize) / slotSize))
    }

    /// The property named `key` of a dictionary.
    func value(forKey key: String) -> EncodedValue? {
        guard isDictionary else { return nil }
        var key = key
        return key.withUTF8 { target in
            var low = 0
            var high = count - 1
            while low <= high {
                let middle = (low + high) / 2
                guard let keyStart = entryKeyOffset(middle) else { return nil }
                let order = compareKey(at: keyStart, with: target)
                if order == 0 { return entryValue(middle) }
                if order < 0 { low = middle + 1 } else { high = middle - 1 }
            }
            return nil
        }
    }

    /// The element at `index` of an array.
    func element(at index: Int) -> EncodedValue? {
        guard isArray, index >= 0, index < count,
              let relative = uint32(at: offset + ValueTag.containerHeaderSize + index * 4) else { return nil }
        return child(at: relative)
    }

    /// The keys of a dictionary, in encoded (UTF-8 byte) order.
    var keys: [String] {
        guard isDictionary else { return [] }
        return (0..<count).compactMap { index in entryKeyOffset(index).flatMap(readKey) }
    }

    /// The entries of a dictionary, in encoded order.
    var entries: [(key: String, value: EncodedValue)] {
        guard isDictionary else { return [] }
        return (0..<count).compactMap { index in
            guard let key = entryKeyOffset(index).flatMap(readKey), let value = entryValue(index) else { return nil }
            return (key, value)
        }
    }

    private func entryKeyOffset(_ index: Int) -> Int? {
        uint32(at: offset + ValueTag.containerHeaderSize + index * 8).flatMap(child)?.offset
    }

    private func entryValue(_ index: Int) -> EncodedValue? {
        uint32(at: offset + ValueTag.containerHeaderSize + index * 8 + 4).flatMap(child)
    }

    /// The value at `relative` bytes from this container's tag. Children always lie past the
    /// header, so a damaged offset can never lead back to its container (no endless recursion).
    private func child(at relative: UInt32) -> EncodedValue? {
        guard relative >= ValueTag.containerHeaderSize else { return nil }
        return EncodedValue(bytes: bytes, offset: offset + Int(relative))
    }

    private func readKey(at position: Int) -> String? {
        guard let length = uint32(at: position), position + 4 + Int(length) <= bytes.count else { return nil }
        return String(decoding: bytes[(position + 4)..<(position + 4 + Int(length))], as: UTF8.self)
    }

    private func compareKey(at position: Int, with target: UnsafeBufferPointer<UInt8>) -> Int {
        guard let length = uint32(at: position).map(Int.init), position + 4 + length <= bytes.count else { return 1 }
        return bytes.withUnsafeBufferPointer { buffer in
            let start = position + 4
            let common = min(length, target.count)
            for index in 0..<common {
                let stored = buffer[start + index]
                if stored != target[index] { return stored < target[index] ? -1 : 1 }
            }
            return length - target.count
        }
    }

    // MARK: - Scalars

    var isNull: Bool { tag == ValueTag.null }

    var bool: Bool? {
        switch tag {
        case ValueTag.trueValue: true
        case ValueTag.falseValue: false
        default: nil
        }
    }

    /// The integer, if this is an integer (not a double).
    var integer: Int64? {
        switch tag {
        case ValueTag.int8: readInteger(Int8.self).map(Int64.init)
        case ValueTag.int16: readInteger(Int16.self).map(Int64.init)
        case ValueTag.int32: readInteger(Int32.self).map(Int64.init)
        case ValueTag.int64: readInteger(Int64.self)
        default: nil
        }
    }

    var double: Double? {
        guard tag == ValueTag.double else { return nil }
        return readInteger(UInt64.self).map(Double.init(bitPattern:))
    }

    var string: String? {
        guard tag == ValueTag.string, let length = uint32(at: offset + 1).map(Int.init),
              offset + 5 + length <= bytes.count else { return nil }
        return String(decoding: bytes[(offset + 5)..<(offset + 5 + length)], as: UTF8.self)
    }

    /// The number of bytes this value occupies, or nil when the bytes are damaged.
    var encodedSize: Int? {
        switch tag {
        case ValueTag.null, ValueTag.falseValue, ValueTag.trueValue: 1
        case ValueTag.int8: 2
        case ValueTag.int16: 3
        case ValueTag.int32: 5
        case ValueTag.int64, ValueTag.double: 9
        case ValueTag.string: uint32(at: offset + 1).map { 5 + Int($0) }
        case ValueTag.array, ValueTag.dictionary: uint32(at: offset + 1).map(Int.init)
        default: nil
        }
    }

    /// The bytes of this value alone: a valid encoding by itself.
    var slice: [UInt8] {
        guard let size = encodedSize, offset + size <= bytes.count else { return [ValueTag.null] }
        if offset == 0 && size == bytes.count { return bytes }
        return Array(bytes[offset..<(offset + size)])
    }

    // MARK: - Decoding

    /// Decodes this value and everything below it. Damaged or truncated values decode as null.
    func decode() -> Value {
        switch tag {
        case ValueTag.falseValue: return .bool(false)
        case ValueTag.trueValue: return .bool(true)
        case ValueTag.int8, ValueTag.int16, ValueTag.int32, ValueTag.int64: return integer.map(Value.int) ?? .null
        case ValueTag.double: return double.map(Value.double) ?? .null
        case ValueTag.string: return string.map(Value.string) ?? .null
        case ValueTag.array:
            return .array((0..<count).map { element(at: $0)?.decode() ?? .null })
        case ValueTag.dictionary:
            var result: [String: Value] = [:]
            result.reserveCapacity(count)
            for (key, value) in entries { result[key] = value.decode() }
            return .dictionary(result)
        default: return .null
        }
    }

    // MARK: - Bytes

    private func uint32(at position: Int) -> UInt32? {
        guard position >= 0, position + 4 <= bytes.count else { return nil }
        return UInt32(bytes[position]) | UInt32(bytes[position + 1]) << 8
            | UInt32(bytes[position + 2]) << 16 | UInt32(bytes[position + 3]) << 24
    }

    private func readInteger<T: FixedWidthInteger>(_ type: T.Type) -> T? {
        let size = MemoryLayout<T>.size
        guard offset + 1 + size <= bytes.count else { return nil }
        var raw: T.Magnitude = 0
        for index in (0..<size).reversed() {
            raw = raw << 8 | T.Magnitude(bytes[offset + 1 + index])
        }
        return T(truncatingIfNeeded: raw)
    }
}
