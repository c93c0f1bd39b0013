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

    // MARK: - Containers

    /// What every slot read of a container needs from its header, read once per walk instead of
    /// once per slot (a dictionary of 20 entries otherwise re-reads its tag and count 40 times).
    private struct Layout {
        let isDictionary: Bool
        /// Bytes per offset slot (2 narrow, 4 wide).
        let width: Int
        /// Bytes before the first offset slot.
        let header: Int
        /// Elements, or entries of a dictionary (each two slots).
        let count: Int
        /// Offset slots: `count`, twice that for a dictionary.
        let slots: Int
        /// The container's stored size; nil when it overruns the bytes (every slot then reads nil).
        let size: Int?
        /// Where children may begin: right behind the offset table.
        var contentStart: Int { header + slots * width }
    }

    /// The layout of an array or dictionary; nil for anything else, and for containers nested
    /// deeper than the encoder ever writes (damaged bytes read as empty). A damaged count is capped
    /// at the number of offset slots the bytes can hold.
    private var layout: Layout? {
        guard let tag, depth < ValueEncoder.maximumDepth else { return nil }
        let dictionary: Bool
        let narrow: Bool
        switch tag {
        case ValueTag.dictionary: (dictionary, narrow) = (true, false)
        case ValueTag.narrowDictionary: (dictionary, narrow) = (true, true)
        case ValueTag.array: (dictionary, narrow) = (false, false)
        case ValueTag.narrowArray: (dictionary, narrow) = (false, true)
        default: return nil
        }
        let width = ValueTag.fieldWidth(narrow: narrow)
        let header = ValueTag.headerSize(narrow: narrow)
        guard let stored = unsigned(at: offset + 1 + width, width: width) else { return nil }
        let perEntry = dictionary ? 2 : 1
        let count = min(stored, max(0, (bytes.count - offset - header) / (width * perEntry)))
        let size = unsigned(at: offset + 1, width: width).flatMap { $0 <= bytes.count - offset ? $0 : nil }
        return Layout(isDictionary: dictionary, width: width, header: header, count: count, slots: count * perEntry, size: size)
    }

    /// Number of elements or entries of a container, 0 for anything else. A damaged count is
    /// capped at the number of offset slots the bytes can hold.
    var count: Int { layout?.count ?? 0 }

    /// The property named `key` of a dictionary.
    func value(forKey key: String) -> EncodedValue? {
        guard let layout, layout.isDictionary else { return nil }
        var key = key
        return key.withUTF8 { target in
            var low = 0
            var high = layout.count - 1
            while low <= high {
                let middle = (low + high) / 2
                guard let keyStart = slot(middle * 2, layout).map({ offset + $0 }) else { return nil }
                let order = compareKey(at: keyStart, with: target)
                if order == 0 { return slot(middle * 2 + 1, layout).map(child) }
                if order < 0 { low = middle + 1 } else { high = middle - 1 }
            }
            return nil
        }
    }

    /// The element at `index` of an array.
    func element(at index: Int) -> EncodedValue? {
        guard let layout, !layout.isDictionary, index >= 0, index < layout.count else { return nil }
        return slot(index, layout).map(child)
    }

    /// Visits the elements of an array in order (nil for a damaged one), without collecting them.
    func forEachElement(_ body: (EncodedValue?) throws -> Void) rethrows {
        guard let layout, !layout.isDictionary else { return }
        for index in 0..<layout.count { try body(slot(index, layout).map(child)) }
    }

    /// The keys of a dictionary, in encoded (UTF-8 byte) order.
    var keys: [String] {
        guard let layout, layout.isDictionary else { return [] }
        return (0..<layout.count).compactMap { index in slot(index * 2, layout).flatMap { readKey(at: offset + $0) } }
    }

    /// Visits the entries of a dictionary in encoded order, without collecting them.
    func forEachEntry(_ body: (String, EncodedValue) throws -> Void) rethrows {
        guard let layout, layout.isDictionary else { return }
        for index in 0..<layout.count {
            guard let key = slot(index * 2, layout).flatMap({ readKey(at: offset + $0) }),
                let value = slot(index * 2 + 1, layout).map(child)
            else { continue }
            try body(key, value)
        }
    }

    /// The entries of a dictionary, in encoded order.
    var entries: [(key: String, value: EncodedValue)] {
        var result: [(key: String, value: EncodedValue)] = []
        result.reserveCapacity(count)
        forEachEntry { key, value in result.append((key, value)) }
        return result
    }

    /// The offset of slot `index`'s child, relative to this container's tag; for dictionaries
    /// slot 2i is the key of entry i and 2i+1 its value. A valid encoding places the children
    /// one after the other behind the offset table, each ending where the next slot's begins (the
    /// last at the container's end). Damaged bytes that point into the header or the table, out
    /// of the container, or at a child that does not fit its window are refused: children then
    /// never overlap, so no walk can revisit bytes (exponential work) or loop back.
    private func slot(_ index: Int, _ layout: Layout) -> Int? {
        let width = layout.width
        let slotPosition = offset + layout.header + index * width
        guard index >= 0, index < layout.slots, let size = layout.size,
            let start = unsigned(at: slotPosition, width: width), start >= layout.contentStart,
            let end = index + 1 < layout.slots ? unsigned(at: slotPosition + width, width: width) : size,
            start < end, end <= size
        else { return nil }
        // A child of unknown size (a damaged tag) has no parts of its own and reads as null.
        let isKey = layout.isDictionary && index % 2 == 0
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
            var elements: [Value] = []
            elements.reserveCapacity(count)
            forEachElement { elements.append($0?.decode() ?? .null) }
            return .array(elements)
        case ValueTag.dictionary, ValueTag.narrowDictionary:
            var result: [String: Value] = [:]
            result.reserveCapacity(count)
            forEachEntry { key, value in result[key] = value.decode() }
            return .dictionary(result)
        default: return .null
        }
    }

    // MARK: - Bytes

    /// A little-endian unsigned field of `width` bytes (2 or 4 in the format; others byte by byte).
    private func unsigned(at position: Int, width: Int) -> Int? {
        guard position >= 0, position <= bytes.count - width else { return nil }
        // One bounds check above instead of one per byte: container walks read these per slot.
        return bytes.withUnsafeBytes { raw in
            switch width {
            case 2: Int(UInt16(littleEndian: raw.loadUnaligned(fromByteOffset: position, as: UInt16.self)))
            case 4: Int(UInt32(littleEndian: raw.loadUnaligned(fromByteOffset: position, as: UInt32.self)))
            default: (0..<width).reversed().reduce(0) { $0 << 8 | Int(raw[position + $1]) }
            }
        }
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
