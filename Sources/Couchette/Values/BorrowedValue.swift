/// A value inside encoded bytes (see ``ValueTag``) that someone else keeps alive: the reads of
/// ``EncodedValue``, written once here, over a borrowed buffer.
///
/// ``EncodedValue`` owns its bytes (an array) and hands each read to this type inside one
/// `withUnsafeBytes`; walks that visit every slot of a body (converting it to `[String: Any]`,
/// decoding it into a ``Value``) stay here from the root down, so no child retains the array,
/// copies it or checks its bounds per byte. The buffer may be an array's storage or a value in
/// LMDB's memory map read inside its transaction: a `BorrowedValue` is valid only while that
/// buffer is, so it is never stored (only passed down a call).
///
/// Reads are bounds-checked against `buffer`: damaged bytes read as MISSING, never crash, and
/// containers nested deeper than ``ValueEncoder/maximumDepth`` read as empty, which bounds every
/// recursive walk whatever the bytes say.
struct BorrowedValue {
    let buffer: UnsafeRawBufferPointer
    let offset: Int
    /// Nesting level: 0 for the value the bytes were opened at.
    let depth: Int

    init(buffer: UnsafeRawBufferPointer, offset: Int, depth: Int) {
        self.buffer = buffer
        self.offset = offset
        self.depth = depth
    }

    @inline(__always)
    var tag: UInt8? { offset >= 0 && offset < buffer.count ? buffer[offset] : nil }

    // MARK: - Containers

    /// What every slot read of a container needs from its header, read once per walk instead of
    /// once per slot (a dictionary of 20 entries otherwise re-reads its tag and count 40 times).
    struct Layout {
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
    ///
    /// Read once per container by every walk, so its two header fields are loaded directly (the
    /// tag says their width) and the slots the bytes hold are counted with a shift.
    @inline(__always)
    var layout: Layout? {
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
        // The size field and the count field, both inside the bytes.
        guard header <= buffer.count - offset else { return nil }
        let stored = narrow ? tableField(offset + 1 + width, 0, 2) : tableField(offset + 1 + width, 0, 4)
        let storedSize = narrow ? tableField(offset + 1, 0, 2) : tableField(offset + 1, 0, 4)
        // Bytes per entry: `width`, twice that for a dictionary (2, 4 or 8, a power of two).
        let entryShift = (narrow ? 1 : 2) + (dictionary ? 1 : 0)
        let count = min(stored, (buffer.count - offset - header) >> entryShift)
        let size = storedSize <= buffer.count - offset ? storedSize : nil
        return Layout(
            isDictionary: dictionary, width: width, header: header, count: count, slots: dictionary ? count * 2 : count, size: size)
    }

    /// Number of elements or entries of a container, 0 for anything else.
    var count: Int { layout?.count ?? 0 }

    /// The property named `key` of a dictionary, by binary search over its sorted keys.
    func value(forKey key: UnsafeBufferPointer<UInt8>) -> BorrowedValue? {
        entry(forKey: key, near: -1).map(\.value)
    }

    /// The property named `key` of a dictionary and the index of its entry, probing entry `hint`
    /// first (where an earlier lookup of the same key in the same bytes found it: a read of a
    /// property before it is set, say); any other hint (-1: none) costs at most that one probe,
    /// whose answer narrows the search. The key found is always compared with `key`, so a wrong
    /// hint cannot give a wrong answer.
    func entry(forKey key: UnsafeBufferPointer<UInt8>, near hint: Int) -> (index: Int, value: BorrowedValue)? {
        guard let layout, layout.isDictionary else { return nil }
        var low = 0
        var high = layout.count - 1
        var middle = hint >= 0 && hint < layout.count ? hint : (low + high) / 2
        while low <= high {
            guard let order = compareKey(ofEntry: middle, layout, with: key) else { return nil }
            if order == 0 { return slot(middle * 2 + 1, layout).map { (middle, child(at: $0)) } }
            if order < 0 { low = middle + 1 } else { high = middle - 1 }
            middle = (low + high) / 2
        }
        return nil
    }

    /// The element at `index` of an array.
    func element(at index: Int) -> BorrowedValue? {
        guard let layout, !layout.isDictionary, index >= 0, index < layout.count else { return nil }
        return slot(index, layout).map(child)
    }

    /// Visits the elements of an array in order (nil for a damaged one), without collecting them.
    ///
    /// The checks of ``slot(_:_:)``, with each offset read once: element i's window ends where
    /// element i + 1's begins.
    func forEachElement(_ body: (BorrowedValue?) throws -> Void) rethrows {
        guard let layout, !layout.isDictionary else { return }
        try forEachElement(in: layout, body)
    }

    /// ``forEachElement(_:)`` with this array's layout already read: exactly `layout.count` calls.
    @inline(__always)
    func forEachElement(in layout: Layout, _ body: (BorrowedValue?) throws -> Void) rethrows {
        guard let size = layout.size else {
            for _ in 0..<layout.count { try body(nil) }
            return
        }
        guard layout.count > 0 else { return }
        let table = offset + layout.header
        var start = tableField(table, 0, layout.width)
        for index in 0..<layout.count {
            let next = index + 1 < layout.slots ? tableField(table, index + 1, layout.width) : size
            defer { start = next }
            guard start >= layout.contentStart, start < next, next <= size else {
                try body(nil)
                continue
            }
            let element = child(at: start)
            try body(element.fits(within: next - start) ? element : nil)
        }
    }

    /// Visits the keys of a dictionary in encoded order, as their stored UTF-8 bytes (a key whose
    /// value is damaged included, a damaged key left out).
    func forEachKey(_ body: (UnsafeRawBufferPointer) throws -> Void) rethrows {
        guard let layout, layout.isDictionary else { return }
        for index in 0..<layout.count {
            guard let key = slot(index * 2, layout).flatMap({ lengthPrefixed(at: offset + $0) }) else { continue }
            try body(UnsafeRawBufferPointer(rebasing: buffer[key]))
        }
    }

    /// Visits the entries of a dictionary in encoded order (damaged ones left out), the key as
    /// its stored UTF-8 bytes.
    func forEachRawEntry(_ body: (UnsafeRawBufferPointer, BorrowedValue) throws -> Void) rethrows {
        try forEachEntryRange { key, value in try body(UnsafeRawBufferPointer(rebasing: buffer[key]), value) }
    }

    /// Visits the entries of a dictionary in encoded order (damaged ones left out), the key as the
    /// range of its stored UTF-8 bytes in `buffer`.
    ///
    /// The checks of ``slot(_:_:)`` for both slots of each entry, with each offset read once: the
    /// key's window ends where the value's begins, the value's where the next key's begins.
    func forEachEntryRange(_ body: (Range<Int>, BorrowedValue) throws -> Void) rethrows {
        guard let layout, layout.isDictionary else { return }
        try forEachEntryRange(in: layout, body)
    }

    /// ``forEachEntryRange(_:)`` with this dictionary's layout already read.
    @inline(__always)
    func forEachEntryRange(in layout: Layout, _ body: (Range<Int>, BorrowedValue) throws -> Void) rethrows {
        guard let size = layout.size, layout.count > 0 else { return }
        let table = offset + layout.header
        var keyStart = tableField(table, 0, layout.width)
        for index in 0..<layout.count {
            let end = entryEnd(index, table, layout, size: size)
            defer { keyStart = end }
            if let (key, value) = intactEntry(index, keyStart: keyStart, end: end, table, layout, size: size) { try body(key, value) }
        }
    }

    /// Whether this dictionary's keys are exactly `shape`'s, in order, with every entry intact;
    /// when they are, entry i's value offset is in `entries[i]` (its key fields left 0).
    ///
    /// The checks of ``forEachEntryRange(in:_:)`` for every entry, each key compared with the
    /// shape's as it is reached, in one loop that stops at the first difference: what a
    /// conversion of a document like the previous one runs for each of its dictionaries (a walk
    /// with a visitor per entry cost more).
    func valueOffsets(
        matching shape: DictionaryShapes.Shape, in layout: Layout, into entries: UnsafeMutablePointer<DictionaryShapes.Entry>
    ) -> Bool {
        guard layout.isDictionary, let size = layout.size, layout.count == shape.count, layout.count > 0 else { return false }
        let table = offset + layout.header
        var keyStart = tableField(table, 0, layout.width)
        for index in 0..<layout.count {
            let end = entryEnd(index, table, layout, size: size)
            guard let (key, value) = intactEntry(index, keyStart: keyStart, end: end, table, layout, size: size),
                shape.keyMatches(index, key, in: buffer)
            else { return false }
            (entries + index).initialize(
                to: DictionaryShapes.Entry(keyStart: 0, keyCount: 0, value: Int32(truncatingIfNeeded: value.offset)))
            keyStart = end
        }
        return true
    }

    /// Where entry `index` of the dictionary whose offset table is at `table` ends: where the next
    /// entry's key begins, the last one at the container's end.
    @inline(__always)
    private func entryEnd(_ index: Int, _ table: Int, _ layout: Layout, size: Int) -> Int {
        2 * index + 2 < layout.slots ? tableField(table, 2 * index + 2, layout.width) : size
    }

    /// Entry `index`'s key bytes and value, nil when the entry is damaged: the checks of
    /// ``slot(_:_:)`` for both its slots, each offset read once (the key, from `keyStart`, ends
    /// before the value begins; the value fits before `end`).
    @inline(__always)
    private func intactEntry(
        _ index: Int, keyStart: Int, end: Int, _ table: Int, _ layout: Layout, size: Int
    ) -> (key: Range<Int>, value: BorrowedValue)? {
        let valueStart = tableField(table, 2 * index + 1, layout.width)
        guard keyStart >= layout.contentStart, keyStart < valueStart, valueStart < end, end <= size,
            let key = lengthPrefixed(at: offset + keyStart), key.upperBound <= offset + valueStart
        else { return nil }
        let value = child(at: valueStart)
        return value.fits(within: end - valueStart) ? (key, value) : nil
    }

    /// Offset slot `index` of the table at `table`, read without a bounds check: ``layout`` caps
    /// a container's count at the slots its bytes hold, so every slot below `layout.slots` lies
    /// inside `buffer`.
    @inline(__always)
    private func tableField(_ table: Int, _ index: Int, _ width: Int) -> Int {
        let position = table + index * width
        return width == 2
            ? Int(UInt16(littleEndian: buffer.loadUnaligned(fromByteOffset: position, as: UInt16.self)))
            : Int(UInt32(littleEndian: buffer.loadUnaligned(fromByteOffset: position, as: UInt32.self)))
    }

    /// Visits the entries of a dictionary in encoded order (damaged ones left out).
    func forEachEntry(_ body: (String, BorrowedValue) throws -> Void) rethrows {
        try forEachRawEntry { key, value in try body(Self.string(key), value) }
    }

    /// The offset of slot `index`'s child, relative to this container's tag; for dictionaries
    /// slot 2i is the key of entry i and 2i+1 its value. A valid encoding places the children
    /// one after the other behind the offset table, each ending where the next slot's begins (the
    /// last at the container's end). Damaged bytes that point into the header or the table, out
    /// of the container, or at a child that does not fit its window are refused: children then
    /// never overlap, so no walk can revisit bytes (exponential work) or loop back.
    func slot(_ index: Int, _ layout: Layout) -> Int? {
        guard let (start, end) = window(ofSlot: index, layout) else { return nil }
        // A child of unknown size (a damaged tag) has no parts of its own and reads as null.
        let isKey = layout.isDictionary && index % 2 == 0
        let childSize = isKey ? lengthPrefixed(at: offset + start).map { $0.upperBound - offset - start } : child(at: start).encodedSize
        guard (childSize ?? 0) <= end - start else { return nil }
        return start
    }

    /// Where slot `index`'s child may lie, relative to this container's tag: from its offset to
    /// the next slot's (the container's end for the last), when that window lies behind the
    /// offset table and inside the container; else nil. (The first checks of ``slot(_:_:)``.)
    @inline(__always)
    private func window(ofSlot index: Int, _ layout: Layout) -> (start: Int, end: Int)? {
        let width = layout.width
        let slotPosition = offset + layout.header + index * width
        guard index >= 0, index < layout.slots, let size = layout.size,
            let start = unsigned(at: slotPosition, width: width), start >= layout.contentStart,
            let end = index + 1 < layout.slots ? unsigned(at: slotPosition + width, width: width) : size,
            start < end, end <= size
        else { return nil }
        return (start, end)
    }

    func child(at relative: Int) -> BorrowedValue {
        BorrowedValue(buffer: buffer, offset: offset + relative, depth: depth + 1)
    }

    /// The bytes of a length-prefixed string starting at `position` (the varint).
    @inline(__always)
    func lengthPrefixed(at position: Int) -> Range<Int>? {
        // Keys and most strings are shorter than 128 bytes: a one-byte length, read inline.
        if position >= 0, position < buffer.count, buffer[position] < 0x80 {
            let length = Int(buffer[position])
            guard length <= buffer.count - position - 1 else { return nil }
            return (position + 1)..<(position + 1 + length)
        }
        guard let (length, size) = varint(at: position) else { return nil }
        let start = position + size
        guard length <= buffer.count - start else { return nil }
        return start..<(start + length)
    }

    /// The key of entry `entry` of a dictionary compared byte-wise with `target`: negative, zero
    /// or positive; a damaged key sorts after everything. Nil when the key's slot is refused
    /// (see ``slot(_:_:)``, whose checks these are): a lookup then finds nothing.
    ///
    /// The checks of `slot(2 * entry, layout)` and the key's bytes read once: a binary search
    /// probes some keys per lookup, and every document read looks up its properties this way.
    @inline(__always)
    private func compareKey(ofEntry entry: Int, _ layout: Layout, with target: UnsafeBufferPointer<UInt8>) -> Int? {
        guard let (start, end) = window(ofSlot: entry * 2, layout) else { return nil }
        guard let range = lengthPrefixed(at: offset + start) else { return 1 }
        guard range.upperBound - offset - start <= end - start else { return nil }
        let common = min(range.count, target.count)
        for index in 0..<common {
            let stored = buffer[range.lowerBound + index]
            if stored != target[index] { return stored < target[index] ? -1 : 1 }
        }
        return range.count - target.count
    }

    /// UTF-8 bytes as a `String` (ill-formed sequences repaired).
    static func string(_ utf8: UnsafeRawBufferPointer) -> String {
        String(decoding: utf8.assumingMemoryBound(to: UInt8.self), as: UTF8.self)
    }

    // MARK: - Scalars

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
        return LargeInteger(text: Self.string(UnsafeRawBufferPointer(rebasing: buffer[range])))
    }

    var string: String? {
        guard tag == ValueTag.string, let range = lengthPrefixed(at: offset + 1) else { return nil }
        return Self.string(UnsafeRawBufferPointer(rebasing: buffer[range]))
    }

    /// Whether this value ends within `room` bytes of its tag: `(encodedSize ?? 0) <= room` (a
    /// value of unknown size has no parts of its own and reads as null), written out for the walks
    /// that check every child against its window, where a call per child was a tenth of a
    /// conversion.
    @inline(__always)
    func fits(within room: Int) -> Bool {
        guard offset >= 0, offset < buffer.count else { return 0 <= room }
        switch buffer[offset] {
        case ValueTag.null, ValueTag.falseValue, ValueTag.trueValue: return 1 <= room
        case ValueTag.int8: return 2 <= room
        case ValueTag.int16: return 3 <= room
        case ValueTag.int32: return 5 <= room
        case ValueTag.int64, ValueTag.double: return 9 <= room
        case ValueTag.string, ValueTag.largeInteger:
            guard let text = lengthPrefixed(at: offset + 1) else { return 0 <= room }
            return text.upperBound - offset <= room
        case ValueTag.array, ValueTag.dictionary:
            guard let size = unsigned(at: offset + 1, width: 4) else { return 0 <= room }
            return size <= room
        case ValueTag.narrowArray, ValueTag.narrowDictionary:
            guard let size = unsigned(at: offset + 1, width: 2) else { return 0 <= room }
            return size <= room
        default: return 0 <= room
        }
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
            var result = [String: Value](minimumCapacity: count)
            forEachEntry { key, value in result[key] = value.decode() }
            return .dictionary(result)
        default: return .null
        }
    }

    // MARK: - Bytes

    /// A little-endian unsigned field of `width` bytes (2 or 4 in the format; others byte by byte).
    @inline(__always)
    func unsigned(at position: Int, width: Int) -> Int? {
        guard position >= 0, position <= buffer.count - width else { return nil }
        switch width {
        case 2: return Int(UInt16(littleEndian: buffer.loadUnaligned(fromByteOffset: position, as: UInt16.self)))
        case 4: return Int(UInt32(littleEndian: buffer.loadUnaligned(fromByteOffset: position, as: UInt32.self)))
        default: return unsignedBytewise(at: position, width: width)
        }
    }

    /// ``unsigned(at:width:)`` for widths the format does not use, kept out of line.
    private func unsignedBytewise(at position: Int, width: Int) -> Int {
        (0..<width).reversed().reduce(0) { $0 << 8 | Int(buffer[position + $1]) }
    }

    /// A LEB128 varint at `position`: its value and how many bytes it took.
    func varint(at position: Int) -> (Int, Int)? {
        guard position >= 0 else { return nil }
        var value = 0
        var shift = 0
        var index = position
        while index < buffer.count, shift < 63 {
            let byte = buffer[index]
            value |= Int(byte & 0x7F) << shift
            index += 1
            if byte & 0x80 == 0 { return (value, index - position) }
            shift += 7
        }
        return nil
    }

    private func readInteger<T: FixedWidthInteger>(_ type: T.Type) -> T? {
        let size = MemoryLayout<T>.size
        guard offset >= 0, offset + 1 + size <= buffer.count else { return nil }
        return T(littleEndian: buffer.loadUnaligned(fromByteOffset: offset + 1, as: T.self))
    }
}
