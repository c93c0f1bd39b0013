/// The binary format of document bodies: compact, and readable one property at a time.
///
/// Every value starts with a one-byte tag. Multi-byte numbers are little-endian; lengths of
/// strings and keys are unsigned LEB128 varints (one byte below 128).
///
/// | tag    | value             | payload                                                         |
/// |--------|-------------------|-----------------------------------------------------------------|
/// | `0x00` | null              | —                                                               |
/// | `0x01` | false             | —                                                               |
/// | `0x02` | true              | —                                                               |
/// | `0x03` | integer           | 1 byte, signed                                                  |
/// | `0x04` | integer           | 2 bytes, signed                                                 |
/// | `0x05` | integer           | 4 bytes, signed                                                 |
/// | `0x06` | integer           | 8 bytes, signed                                                 |
/// | `0x07` | double            | 8 bytes, IEEE 754 (never NaN or infinite)                       |
/// | `0x08` | string            | varint byte count, then UTF-8 bytes                             |
/// | `0x09` | array             | u32 total size, u32 count, count × u32 element offset, elements |
/// | `0x0A` | dictionary        | u32 total size, u32 count, count × (u32 key offset, u32 value offset), then keys (varint length + UTF-8) and values |
/// | `0x0B` | narrow array      | as `0x09` with every u32 field a u16                            |
/// | `0x0C` | narrow dictionary | as `0x0A` with every u32 field a u16                            |
/// | `0x0D` | large integer     | varint byte count, then the canonical decimal text (ASCII) of an integer outside `Int64` (see ``LargeInteger``) |
///
/// Offsets are measured from the container's tag byte and "total size" counts the whole container
/// from its tag, so a container can be copied or skipped without being read, and moved without
/// being rewritten. A container whose total size fits in 16 bits is always narrow.
///
/// Dictionary entries are sorted by the UTF-8 bytes of their keys, which makes the encoding
/// canonical (equal values encode to equal bytes — revision digests rely on it) and lets a reader
/// find one key by binary search without decoding anything else (see ``EncodedValue``).
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
    static let narrowArray: UInt8 = 0x0B
    static let narrowDictionary: UInt8 = 0x0C
    static let largeInteger: UInt8 = 0x0D

    /// The tag of a dictionary or array, narrow or wide.
    static func container(dictionary: Bool, narrow: Bool) -> UInt8 {
        switch (dictionary, narrow) {
        case (true, true): narrowDictionary
        case (true, false): self.dictionary
        case (false, true): narrowArray
        case (false, false): array
        }
    }

    /// Bytes of the size and count fields (each) in a wide or narrow container.
    static func fieldWidth(narrow: Bool) -> Int { narrow ? 2 : 4 }
    /// Bytes before the first offset slot: tag, total size, count.
    static func headerSize(narrow: Bool) -> Int { 1 + 2 * fieldWidth(narrow: narrow) }
}

/// Why a value could not be encoded, and where: the path is built as the error travels up.
struct EncodingFailure: Error {
    enum Step {
        case key(String)
        case index(Int)
    }

    var path: [Step] = []
    let reason: String

    /// `a.b[2]`, or `(root)` for the top level.
    var pathDescription: String {
        guard !path.isEmpty else { return "(root)" }
        var text = ""
        for step in path {
            switch step {
            case .key(let key): text += text.isEmpty ? key : "." + key
            case .index(let index): text += "[\(index)]"
            }
        }
        return text
    }

    var couchetteError: CouchetteError {
        CouchetteError(.invalidParameter, "value at '\(pathDescription)' cannot be stored: \(reason)")
    }
}

/// Writes values in the binary format described by ``ValueTag``.
///
/// Containers are written through ``writeArray(count:element:)`` and
/// ``writeDictionary(sortedKeys:value:)``, so any in-memory form (``Value``, mutable containers,
/// already-encoded values) can be written without converting it to another form first.
struct ValueEncoder {
    private(set) var bytes: [UInt8] = []
    /// Write null where a value cannot be stored instead of failing (for snapshots).
    var lenient = false
    /// The generation of the revision being encoded: written as `revpos` into blob dictionaries
    /// that do not have one yet (CouchDB's "revision that introduced this attachment", which
    /// replication compares with `atts_since` to send only content the peer lacks).
    var blobRevisionPosition: Int64?
    private var depth = 0
    /// Slot targets of the containers being written, innermost last (see
    /// ``closeWrittenContainer(start:slots:dictionary:)``).
    private var pendingSlots: [Int] = []

    static let maximumDepth = 512

    /// Encodes `value`, rejecting NaN and infinities with `.invalidParameter` naming the key path.
    static func encode(_ value: Value) throws -> [UInt8] {
        var encoder = ValueEncoder()
        do {
            try encoder.write(value)
        } catch let failure as EncodingFailure {
            throw failure.couchetteError
        }
        return encoder.bytes
    }

    /// Dictionary keys in the order the format stores them (by UTF-8 bytes).
    static func sortedKeys<Keys: Sequence<String>>(_ keys: Keys) -> [String] {
        keys.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
    }

    mutating func write(null: Void) { bytes.append(ValueTag.null) }
    mutating func write(bool flag: Bool) { bytes.append(flag ? ValueTag.trueValue : ValueTag.falseValue) }

    mutating func write(_ value: Value) throws {
        switch value {
        case .null: write(null: ())
        case .bool(let flag): write(bool: flag)
        case .int(let number): writeInteger(number)
        case .double(let number): try writeDouble(number)
        case .largeInteger(let number): writeLargeInteger(number)
        case .string(let text): writeString(text)
        case .array(let elements):
            try writeArray(count: elements.count) { encoder, index in try encoder.write(elements[index]) }
        case .dictionary(let entries):
            let keys = Self.sortedKeys(entries.keys)
            try writeDictionary(sortedKeys: keys) { encoder, index in try encoder.write(entries[keys[index]]!) }
        }
    }

    /// Copies an already-encoded value as it is (encoded values are canonical and relocatable).
    mutating func append(_ encoded: EncodedValue) {
        bytes.append(contentsOf: encoded.sliceBytes)
    }

    /// Records that the value about to be written cannot be stored: throws, or writes null when
    /// ``lenient``.
    mutating func unstorable(_ reason: String) throws {
        guard lenient else { throw EncodingFailure(reason: reason) }
        bytes.append(ValueTag.null)
    }

    mutating func writeDouble(_ number: Double) throws {
        guard number.isFinite else { return try unstorable("\(number) is not a JSON number (no NaN or infinity)") }
        writeFiniteDouble(number)
    }

    /// Writes a double already known to be finite (for example one read from JSON text).
    mutating func writeFiniteDouble(_ number: Double) {
        bytes.append(ValueTag.double)
        appendLittleEndian(number.bitPattern)
    }

    mutating func writeInteger(_ number: Int64) {
        let (tag, size) = Self.integerForm(of: number)
        bytes.append(tag)
        guard size > 1 else { return bytes.append(UInt8(truncatingIfNeeded: number)) }
        // The narrower form's little-endian bytes are the first ones of the 64-bit form's.
        withUnsafeBytes(of: number.littleEndian) { bytes.append(contentsOf: $0[..<size]) }
    }

    /// How ``writeInteger(_:)`` writes `number`: the tag of its narrowest form, then that many of
    /// its little-endian bytes (which a stored integer's patch writes over it too).
    static func integerForm(of number: Int64) -> (tag: UInt8, size: Int) {
        if Int8(exactly: number) != nil { return (ValueTag.int8, 1) }
        if Int16(exactly: number) != nil { return (ValueTag.int16, 2) }
        if Int32(exactly: number) != nil { return (ValueTag.int32, 4) }
        return (ValueTag.int64, 8)
    }

    mutating func writeLargeInteger(_ number: LargeInteger) {
        bytes.append(ValueTag.largeInteger)
        appendLengthPrefixed(number.text)
    }

    mutating func writeString(_ text: String) {
        bytes.append(ValueTag.string)
        appendLengthPrefixed(text)
    }

    mutating func writeArray(count: Int, element: (inout ValueEncoder, Int) throws -> Void) throws {
        let (start, firstSlot) = try enterContainer()
        for index in 0..<count {
            pendingSlots.append(bytes.count)
            do {
                try element(&self, index)
            } catch var failure as EncodingFailure {
                failure.path.insert(.index(index), at: 0)
                throw failure
            }
        }
        leaveContainer(start, firstSlot, dictionary: false)
    }

    /// Writes a dictionary; `sortedKeys` must come from ``sortedKeys(_:)`` and `value` writes the
    /// value of `sortedKeys[index]`.
    mutating func writeDictionary(sortedKeys keys: [String], value: (inout ValueEncoder, Int) throws -> Void) throws {
        try writeDictionary(count: keys.count, key: { keys[$0] }, value: value)
    }

    /// ``writeDictionary(sortedKeys:value:)`` for keys kept elsewhere (beside their values, say):
    /// `key(index)` gives the `index`th key in stored order, so no array of keys is built.
    mutating func writeDictionary(count: Int, key: (Int) -> String, value: (inout ValueEncoder, Int) throws -> Void) throws {
        let (start, firstSlot) = try enterContainer()
        for index in 0..<count {
            let key = key(index)
            pendingSlots.append(bytes.count)
            appendLengthPrefixed(key)
            pendingSlots.append(bytes.count)
            do {
                try value(&self, index)
            } catch var failure as EncodingFailure {
                failure.path.insert(.key(key), at: 0)
                throw failure
            }
        }
        leaveContainer(start, firstSlot, dictionary: true)
    }

    // MARK: - Containers

    /// Where a container's contents start and its first slot target in ``pendingSlots``: the
    /// contents are written first, the header put in front of them when they are done.
    private mutating func enterContainer() throws -> (start: Int, firstSlot: Int) {
        guard depth < Self.maximumDepth else {
            throw EncodingFailure(reason: "nesting deeper than \(Self.maximumDepth) levels (does a container contain itself?)")
        }
        depth += 1
        return (bytes.count, pendingSlots.count)
    }

    private mutating func leaveContainer(_ start: Int, _ firstSlot: Int, dictionary: Bool) {
        depth -= 1
        closeWrittenContainer(start: start, slots: pendingSlots[firstSlot...], dictionary: dictionary)
        pendingSlots.removeSubrange(firstSlot...)
    }

    // MARK: - Headers and JSON transcoding

    init() {}

    /// An encoder whose buffer already holds room for about `capacity` bytes (and its slot list
    /// for a document's worth of containers, which would otherwise regrow four times).
    init(capacity: Int, slots: Int = 32) {
        bytes.reserveCapacity(capacity)
        pendingSlots.reserveCapacity(slots)
    }

    /// Empties the encoder for another value, keeping the room of its buffers: one encoder then
    /// writes the bodies of a whole batch without allocating per document.
    mutating func reset() {
        bytes.removeAll(keepingCapacity: true)
        pendingSlots.removeAll(keepingCapacity: true)
        depth = 0
        lenient = false
        blobRevisionPosition = nil
    }

    /// Drops every byte from `count` on: what a failed value left behind when the buffer holds
    /// several values one after another (a streamed model body that failed, say).
    mutating func truncate(to count: Int) {
        if count < bytes.count { bytes.removeSubrange(count...) }
    }

    /// Appends a length-prefixed key (a dictionary entry whose value follows).
    mutating func appendKey(_ utf8: UnsafeBufferPointer<UInt8>) {
        appendVarint(utf8.count)
        bytes.append(contentsOf: utf8)
    }

    /// Appends bytes as they are: entries of a container being closed, moved into stored order
    /// (see ``BodyStream``).
    mutating func appendRaw(_ raw: UnsafeBufferPointer<UInt8>) {
        bytes.append(contentsOf: raw)
    }

    mutating func appendStringBytes(_ utf8: UnsafeBufferPointer<UInt8>) {
        bytes.append(ValueTag.string)
        appendVarint(utf8.count)
        bytes.append(contentsOf: utf8)
    }

    /// Makes the entries written since `start` a container, by putting its header in front of
    /// them: one move of the contents, which already lie in canonical order. `slots` holds the
    /// absolute position of each slot's target: for an array each element's start, for a
    /// dictionary each key's length prefix then its value's start.
    mutating func closeWrittenContainer(start: Int, slots: ArraySlice<Int>, dictionary: Bool) {
        let contentSize = bytes.count - start
        let narrow = ValueTag.headerSize(narrow: true) + slots.count * 2 + contentSize <= Int(UInt16.max)
        let width = ValueTag.fieldWidth(narrow: narrow)
        let header = ValueTag.headerSize(narrow: narrow) + slots.count * width
        if header <= Self.zeros.count {
            bytes.append(contentsOf: Self.zeros[..<header])
        } else {
            bytes.append(contentsOf: repeatElement(0, count: header))
        }
        let tag = ValueTag.container(dictionary: dictionary, narrow: narrow)
        // The header is written through one pointer: every field fits its width (the contents
        // were bounded above, narrow fields only when the whole container is under 64 KiB).
        bytes.withUnsafeMutableBytes { buffer in
            let base = buffer.baseAddress! + start
            (base + header).copyMemory(from: base, byteCount: contentSize)  // regions may overlap
            func field(_ number: Int, at offset: Int) {
                if narrow {
                    base.storeBytes(of: UInt16(number).littleEndian, toByteOffset: offset, as: UInt16.self)
                } else {
                    base.storeBytes(of: UInt32(number).littleEndian, toByteOffset: offset, as: UInt32.self)
                }
            }
            base.storeBytes(of: tag, as: UInt8.self)
            field(header + contentSize, at: 1)
            field(dictionary ? slots.count / 2 : slots.count, at: 1 + width)
            var position = ValueTag.headerSize(narrow: narrow)
            for target in slots {
                field(target - start + header, at: position)
                position += width
            }
        }
    }

    /// Room for the header of a container of up to ~60 slots, appended in one copy.
    private static let zeros = [UInt8](repeating: 0, count: 256)

    /// The UTF-8 bytes of the key whose varint length starts at `position` in `bytes`: a key this
    /// process wrote a moment ago (the transcoder's or the streamed encoder's own output), so
    /// well formed.
    @inline(__always)
    static func writtenKey(in bytes: UnsafeBufferPointer<UInt8>, at position: Int) -> UnsafeBufferPointer<UInt8> {
        var length = 0
        var shift = 0
        var cursor = position
        while bytes[cursor] & 0x80 != 0 {
            length |= Int(bytes[cursor] & 0x7F) << shift
            shift += 7
            cursor += 1
        }
        length |= Int(bytes[cursor]) << shift
        cursor += 1
        return UnsafeBufferPointer(rebasing: bytes[cursor..<(cursor + length)])
    }

    // MARK: - Bytes

    private mutating func appendLengthPrefixed(_ text: String) {
        var text = text
        text.withUTF8 { utf8 in
            appendVarint(utf8.count)
            bytes.append(contentsOf: utf8)
        }
    }

    private mutating func appendVarint(_ value: Int) {
        var remaining = UInt(value)
        while remaining >= 0x80 {
            bytes.append(UInt8(remaining & 0x7F) | 0x80)
            remaining >>= 7
        }
        bytes.append(UInt8(remaining))
    }

    private mutating func appendLittleEndian<T: FixedWidthInteger>(_ number: T) {
        withUnsafeBytes(of: number.littleEndian) { bytes.append(contentsOf: $0) }
    }
}
