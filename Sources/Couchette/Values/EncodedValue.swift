/// A value inside an encoded body (see ``ValueTag``), read lazily.
///
/// Looking up one property costs a binary search over the dictionary's offset table; nothing else
/// of the body is decoded. Reads are bounds-checked: damaged bytes read as MISSING, never crash.
///
/// Every value knows how deep it sits: the encoder never nests deeper than
/// ``ValueEncoder/maximumDepth``, so containers below that depth can only come from damaged bytes
/// and read as empty. Everything that walks a value recursively (decoding, comparing, hashing,
/// converting) is thereby bounded, whatever the bytes say.
struct EncodedValue: Sendable {
    let bytes: [UInt8]
    let offset: Int
    /// Nesting level: 0 for the value the bytes were opened at.
    let depth: Int

    init(bytes: [UInt8], offset: Int = 0) {
        self.init(bytes: bytes, offset: offset, depth: 0)
    }

    private init(bytes: [UInt8], offset: Int, depth: Int) {
        self.bytes = bytes
        self.offset = offset
        self.depth = depth
    }

    var tag: UInt8? { offset >= 0 && offset < bytes.count ? bytes[offset] : nil }

    var isDictionary: Bool { tag == ValueTag.dictionary || tag == ValueTag.narrowDictionary }
    var isArray: Bool { tag == ValueTag.array || tag == ValueTag.narrowArray }
    private var isNarrow: Bool { tag == ValueTag.narrowArray || tag == ValueTag.narrowDictionary }

    // MARK: - Containers

    /// Number of elements or entries of a container, 0 for anything else. A damaged count is
    /// capped at the number of offset slots the bytes can hold.
    var count: Int {
        let dictionary = isDictionary
        guard dictionary || isArray, depth < ValueEncoder.maximumDepth else { return 0 }
        let width = ValueTag.fieldWidth(narrow: isNarrow)
        guard let stored = unsigned(at: offset + 1 + width, width: width) else { return 0 }
        let entrySize = width * (dictionary ? 2 : 1)
        return min(stored, max(0, (bytes.count - offset - ValueTag.headerSize(narrow: isNarrow)) / entrySize))
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
                guard let keyStart = slot(middle * 2).map({ offset + $0 }) else { return nil }
                let order = compareKey(at: keyStart, with: target)
                if order == 0 { return slot(middle * 2 + 1).flatMap(child) }
                if order < 0 { low = middle + 1 } else { high = middle - 1 }
            }
            return nil
        }
    }

    /// The element at `index` of an array.
    func element(at index: Int) -> EncodedValue? {
        guard isArray, index >= 0, index < count else { return nil }
        return slot(index).flatMap(child)
    }

    /// The keys of a dictionary, in encoded (UTF-8 byte) order.
    var keys: [String] {
        guard isDictionary else { return [] }
        return (0..<count).compactMap { index in slot(index * 2).flatMap { readKey(at: offset + $0) } }
    }

    /// Visits the entries of a dictionary in encoded order, without collecting them.
    func forEachEntry(_ body: (String, EncodedValue) throws -> Void) rethrows {
        guard isDictionary else { return }
        for index in 0..<count {
            guard let key = slot(index * 2).flatMap({ readKey(at: offset + $0) }),
                let value = slot(index * 2 + 1).map(child)
            else { continue }
            try body(key, value)
        }
    }

    /// The entries of a dictionary, in encoded order.
    var entries: [(key: String, value: EncodedValue)] {
        guard isDictionary else { return [] }
        return (0..<count).compactMap { index in
            guard let key = slot(index * 2).flatMap({ readKey(at: offset + $0) }),
                let value = slot(index * 2 + 1).flatMap(child)
            else { return nil }
            return (key, value)
        }
    }

    /// The offset of slot `index`'s child, relative to this container's tag; for dictionaries
    /// slot 2i is the key of entry i and 2i+1 its value. A valid encoding places the children
    /// one after the other behind the offset table, each ending where the next slot's begins (the
    /// last at the container's end). Damaged bytes that point into the header or the table, out
    /// of the container, or at a child that does not fit its window are refused: children then
    /// never overlap, so no walk can revisit bytes (exponential work) or loop back.
    private func slot(_ index: Int) -> Int? {
        let narrow = isNarrow
        let width = ValueTag.fieldWidth(narrow: narrow)
        let header = ValueTag.headerSize(narrow: narrow)
        let slots = count * (isDictionary ? 2 : 1)
        let contentStart = header + slots * width
        guard index >= 0, index < slots,
            let size = unsigned(at: offset + 1, width: width), size <= bytes.count - offset,
            let start = unsigned(at: offset + header + index * width, width: width), start >= contentStart,
            let end = index + 1 < slots ? unsigned(at: offset + header + (index + 1) * width, width: width) : size,
            start < end, end <= size
        else { return nil }
        // A child of unknown size (a damaged tag) has no parts of its own and reads as null.
        let isKey = isDictionary && index % 2 == 0
        let childSize = isKey ? lengthPrefixed(at: offset + start).map { $0.upperBound - offset - start } : child(at: start).encodedSize
        guard (childSize ?? 0) <= end - start else { return nil }
        return start
    }

    private func child(at relative: Int) -> EncodedValue {
        EncodedValue(bytes: bytes, offset: offset + relative, depth: depth + 1)
    }

    /// The bytes of a length-prefixed string starting at `position` (the varint).
    private func lengthPrefixed(at position: Int) -> Range<Int>? {
        guard let (length, size) = varint(at: position) else { return nil }
        let start = position + size
        guard length <= bytes.count - start else { return nil }
        return start..<(start + length)
    }

    private func readKey(at position: Int) -> String? {
        lengthPrefixed(at: position).map { String(decoding: bytes[$0], as: UTF8.self) }
    }

    private func compareKey(at position: Int, with target: UnsafeBufferPointer<UInt8>) -> Int {
        guard let range = lengthPrefixed(at: position) else { return 1 }
        return bytes.withUnsafeBufferPointer { buffer in
            let common = min(range.count, target.count)
            for index in 0..<common {
                let stored = buffer[range.lowerBound + index]
                if stored != target[index] { return stored < target[index] ? -1 : 1 }
            }
            return range.count - target.count
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

    /// The integer outside `Int64`'s range, if this is one (damaged text reads as nil).
    var largeInteger: LargeInteger? {
        guard tag == ValueTag.largeInteger, let range = lengthPrefixed(at: offset + 1) else { return nil }
        return LargeInteger(text: String(decoding: bytes[range], as: UTF8.self))
    }

    /// Any number as its nearest `Double`: integers, doubles and large integers; nil otherwise.
    var number: Double? {
        switch tag {
        case ValueTag.int8, ValueTag.int16, ValueTag.int32, ValueTag.int64: integer.map(Double.init)
        case ValueTag.double: double
        case ValueTag.largeInteger: largeInteger?.double
        default: nil
        }
    }

    var string: String? {
        guard tag == ValueTag.string, let range = lengthPrefixed(at: offset + 1) else { return nil }
        return String(decoding: bytes[range], as: UTF8.self)
    }

    /// The number of bytes this value occupies, or nil when the bytes are damaged.
    var encodedSize: Int? {
        switch tag {
        case ValueTag.null, ValueTag.falseValue, ValueTag.trueValue: 1
        case ValueTag.int8: 2
        case ValueTag.int16: 3
        case ValueTag.int32: 5
        case ValueTag.int64, ValueTag.double: 9
        case ValueTag.string, ValueTag.largeInteger: lengthPrefixed(at: offset + 1).map { $0.upperBound - offset }
        case ValueTag.array, ValueTag.dictionary: unsigned(at: offset + 1, width: 4)
        case ValueTag.narrowArray, ValueTag.narrowDictionary: unsigned(at: offset + 1, width: 2)
        default: nil
        }
    }

    /// The bytes of this value alone: a valid encoding by itself (null when damaged).
    var slice: [UInt8] { Array(sliceBytes) }

    /// Like ``slice``, without copying.
    var sliceBytes: ArraySlice<UInt8> {
        guard let size = encodedSize, size > 0, offset + size <= bytes.count else { return [ValueTag.null] }
        return bytes[offset..<(offset + size)]
    }

    // MARK: - Decoding

    /// Decodes this value and everything below it. Damaged or truncated values decode as null.
    func decode() -> Value {
        switch tag {
        case ValueTag.falseValue: return .bool(false)
        case ValueTag.trueValue: return .bool(true)
        case ValueTag.int8, ValueTag.int16, ValueTag.int32, ValueTag.int64: return integer.map(Value.int) ?? .null
        case ValueTag.double: return double.map(Value.double) ?? .null
        case ValueTag.largeInteger: return largeInteger.map(Value.largeInteger) ?? .null
        case ValueTag.string: return string.map(Value.string) ?? .null
        case ValueTag.array, ValueTag.narrowArray:
            return .array((0..<count).map { element(at: $0)?.decode() ?? .null })
        case ValueTag.dictionary, ValueTag.narrowDictionary:
            var result: [String: Value] = [:]
            result.reserveCapacity(count)
            for (key, value) in entries { result[key] = value.decode() }
            return .dictionary(result)
        default: return .null
        }
    }

    // MARK: - Bytes

    private func unsigned(at position: Int, width: Int) -> Int? {
        guard position >= 0, position + width <= bytes.count else { return nil }
        var value = 0
        for index in (0..<width).reversed() { value = value << 8 | Int(bytes[position + index]) }
        return value
    }

    /// A LEB128 varint at `position`: its value and how many bytes it took.
    private func varint(at position: Int) -> (Int, Int)? {
        var value = 0
        var shift = 0
        var index = position
        while index < bytes.count, shift < 63 {
            let byte = bytes[index]
            value |= Int(byte & 0x7F) << shift
            index += 1
            if byte & 0x80 == 0 { return (value, index - position) }
            shift += 7
        }
        return nil
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
