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

    /// The reads below, over this value's bytes (see ``BorrowedValue``).
    @inline(__always)
    func withBorrowed<R>(_ body: (BorrowedValue) throws -> R) rethrows -> R {
        try bytes.withUnsafeBytes { try body(BorrowedValue(buffer: $0, offset: offset, depth: depth)) }
    }

    /// The owned form of a child `withBorrowed` found.
    private func owned(_ child: BorrowedValue) -> EncodedValue {
        EncodedValue(bytes: bytes, offset: child.offset, depth: child.depth)
    }

    // MARK: - Containers

    /// Number of elements or entries of a container, 0 for anything else. A damaged count is
    /// capped at the number of offset slots the bytes can hold.
    var count: Int { withBorrowed(\.count) }

    /// The property named `key` of a dictionary.
    func value(forKey key: String) -> EncodedValue? {
        var key = key
        return key.withUTF8 { target in withBorrowed { $0.value(forKey: target) }.map(owned) }
    }

    /// The property named `key` of a dictionary and the index of its entry, looked for at entry
    /// `hint` first (see ``BorrowedValue/entry(forKey:near:)``; -1: no hint).
    func entry(forKey key: String, near hint: Int) -> (index: Int, value: EncodedValue)? {
        var key = key
        return key.withUTF8 { target in
            withBorrowed { $0.entry(forKey: target, near: hint) }.map { ($0.index, owned($0.value)) }
        }
    }

    /// The element at `index` of an array.
    func element(at index: Int) -> EncodedValue? {
        withBorrowed { $0.element(at: index) }.map(owned)
    }

    /// Visits the elements of an array in order (nil for a damaged one), without collecting them.
    func forEachElement(_ body: (EncodedValue?) throws -> Void) rethrows {
        try withBorrowed { borrowed in try borrowed.forEachElement { try body($0.map(owned)) } }
    }

    /// The keys of a dictionary, in encoded (UTF-8 byte) order.
    var keys: [String] {
        withBorrowed { borrowed in
            var keys: [String] = []
            keys.reserveCapacity(borrowed.count)
            borrowed.forEachKey { keys.append(BorrowedValue.string($0)) }
            return keys
        }
    }

    /// Visits the entries of a dictionary in encoded order, without collecting them.
    func forEachEntry(_ body: (String, EncodedValue) throws -> Void) rethrows {
        try withBorrowed { borrowed in try borrowed.forEachEntry { try body($0, owned($1)) } }
    }

    /// The entries of a dictionary, in encoded order.
    var entries: [(key: String, value: EncodedValue)] {
        var result: [(key: String, value: EncodedValue)] = []
        result.reserveCapacity(count)
        forEachEntry { key, value in result.append((key, value)) }
        return result
    }

    // MARK: - Scalars

    var isNull: Bool { tag == ValueTag.null }

    var bool: Bool? { withBorrowed(\.bool) }

    /// The integer, if this is an integer (not a double).
    var integer: Int64? { withBorrowed(\.integer) }

    var double: Double? { withBorrowed(\.double) }

    /// The integer outside `Int64`'s range, if this is one (damaged text reads as nil).
    var largeInteger: LargeInteger? { withBorrowed(\.largeInteger) }

    /// Any number as its nearest `Double`: integers, doubles and large integers; nil otherwise.
    var number: Double? {
        switch tag {
        case ValueTag.int8, ValueTag.int16, ValueTag.int32, ValueTag.int64: integer.map(Double.init)
        case ValueTag.double: double
        case ValueTag.largeInteger: largeInteger?.double
        default: nil
        }
    }

    var string: String? { withBorrowed(\.string) }

    /// The number of bytes this value occupies, or nil when the bytes are damaged.
    var encodedSize: Int? { withBorrowed(\.encodedSize) }

    /// Whether `other` is this very value: the same position in the same buffer (not merely equal bytes).
    func isSameValue(as other: EncodedValue) -> Bool {
        guard offset == other.offset, bytes.count == other.bytes.count else { return false }
        return bytes.withUnsafeBufferPointer { mine in other.bytes.withUnsafeBufferPointer { $0.baseAddress == mine.baseAddress } }
    }

    /// Whether this value is the whole of its buffer (a document body just read, not a part of one).
    var isWholeBuffer: Bool { offset == 0 && encodedSize == bytes.count }

    /// The bytes of this value alone: a valid encoding by itself (null when damaged).
    var slice: [UInt8] { Array(sliceBytes) }

    /// Like ``slice``, without copying.
    var sliceBytes: ArraySlice<UInt8> {
        guard let size = encodedSize, size > 0, offset + size <= bytes.count else { return [ValueTag.null] }
        return bytes[offset..<(offset + size)]
    }

    // MARK: - Decoding

    /// Decodes this value and everything below it. Damaged or truncated values decode as null.
    func decode() -> Value { withBorrowed { $0.decode() } }
}
