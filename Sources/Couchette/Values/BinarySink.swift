/// Writes parser events straight into the binary format (see ``ValueTag``), in one pass.
///
/// Values are written where they are read, and only their positions are remembered (one flat
/// stack for every open container). A container's header goes in front of its contents: room for
/// it is left when the container opens — as much as the container opened at the same place in
/// the previous value needed, so a run of documents of one shape (an import) writes each header
/// in place — and the contents move only when the guess was wrong. An object's entries are sorted
/// only when its keys did not arrive in order (JSON written with sorted keys, like CouchDB's and
/// the benchmark's, never is).
///
/// Bytes go through a pointer (``PlainBuffer``), not an `Array`; like it, keep one owner.
struct BinarySink: JSONSink {
    private var output: PlainBuffer<UInt8>

    private struct Frame {
        enum Kind { case top, array, object }
        /// Where the container's tag is.
        let start: Int
        /// Where its contents start: the room left for its header ends here.
        let contentStart: Int
        /// Index in ``slots`` of the container's first slot target.
        let firstSlot: Int
        /// The container's place among those opened in the value (for ``headerGuesses``).
        let ordinal: Int
        let kind: Kind
        /// Keys so far strictly increasing by their UTF-8 bytes (no repeats).
        var inOrder = true
        /// Where the bytes of the last key start in the output, and how many there are (-1: no
        /// key yet), to check the next one's order without decoding its length again.
        var lastKey = 0
        var lastKeyCount = -1

        /// Outside every container: the value itself.
        static let outside = Frame(start: 0, contentStart: 0, firstSlot: 0, ordinal: 0, kind: .top)
    }

    /// The innermost open container (``Frame/outside`` when none is open).
    private var top = Frame.outside
    /// The containers open around ``top``, outermost first.
    private var enclosing: PlainBuffer<Frame>
    /// Slot targets of every open container, innermost last: for an array each element's start,
    /// for an object each key's length prefix then its value's start (absolute positions).
    private var slots: PlainBuffer<Int>
    /// The header size of the container opened `n`th in the previous value, for the first
    /// containers of a value (0: none seen yet); nil for a sink that writes one value.
    private var headerGuesses: PlainBuffer<Int>?
    /// Containers opened since the value began.
    private var opened = 0

    /// Containers per value whose header sizes are remembered.
    private static let guessedContainers = 64
    /// The smallest header: a narrow container without entries.
    private static let smallestHeader = ValueTag.headerSize(narrow: true)
    /// The most bytes a varint length takes.
    private static let longestVarint = 10

    /// A sink for a run of values (an import), whose output buffer starts with room for
    /// `capacity` bytes: it leaves room for each container's header as its counterpart in the
    /// previous value needed.
    init(capacity: Int = 0) {
        output = PlainBuffer(capacity: capacity)
        slots = PlainBuffer(capacity: 64)
        enclosing = PlainBuffer(capacity: 8)
        var guesses = PlainBuffer<Int>(capacity: Self.guessedContainers)
        for _ in 0..<Self.guessedContainers { guesses.append(0) }
        headerGuesses = guesses
    }

    /// A sink for one value, writing into memory the caller lends (see
    /// ``PlainBuffer/init(borrowing:)``); without header guesses, which only a run of values uses.
    private init(
        output: UnsafeMutableBufferPointer<UInt8>, slots: UnsafeMutableBufferPointer<Int>, enclosing: UnsafeMutableBufferPointer<Frame>
    ) {
        self.output = PlainBuffer(borrowing: output)
        self.slots = PlainBuffer(borrowing: slots)
        self.enclosing = PlainBuffer(borrowing: enclosing)
    }

    /// The binary form of one JSON value (see ``JSON/encodeBinary(utf8:)``), written straight
    /// into the array it returns, with the parser's bookkeeping on the stack: no allocation but
    /// the array's for a value of usual size and shape.
    static func transcode(_ utf8: UnsafeBufferPointer<UInt8>) throws -> [UInt8] {
        // Room for the usual binary form (a little larger than compact text: each string and key
        // keeps its bytes, each slot takes two); a larger one moves to the sink's own buffer.
        let room = utf8.count + utf8.count / 4 + 64
        var outgrown: [UInt8]?
        let written = try [UInt8](unsafeUninitializedCapacity: room) { bytes, initialized in
            try withUnsafeTemporaryAllocation(of: Int.self, capacity: 128) { slots in
                try withUnsafeTemporaryAllocation(of: Frame.self, capacity: 16) { enclosing in
                    // The sink lives only in this closure, as the memory it borrows does.
                    var sink = BinarySink(output: bytes, slots: slots, enclosing: enclosing)
                    try JSONParser.parse(utf8: utf8, into: &sink)
                    if sink.output.isInLentMemory {
                        initialized = sink.output.count
                    } else {
                        outgrown = sink.bytes
                    }
                }
            }
        }
        return outgrown ?? written
    }

    /// Bytes written so far.
    var count: Int { output.count }

    /// The bytes written, as an array.
    var bytes: [UInt8] { Array(output.elements) }

    /// Calls `body` with the bytes written (valid only during the call).
    func withBytes<Result>(_ body: (UnsafeRawBufferPointer) throws -> Result) rethrows -> Result {
        try body(UnsafeRawBufferPointer(output.elements))
    }

    /// The first byte written: the tag of the value, once it is complete.
    var firstByte: UInt8? { output.count > 0 ? output[0] : nil }

    /// Forgets everything written, and the containers a failed value left open, to write the
    /// next value from the start (the header guesses stay).
    mutating func reset() {
        output.truncate(to: 0)
        slots.truncate(to: 0)
        enclosing.truncate(to: 0)
        top = .outside
        opened = 0
    }

    /// Replaces what was written by a value already in the binary format.
    mutating func replace(with encoded: [UInt8]) {
        reset()
        encoded.withUnsafeBufferPointer { output.append($0) }
    }

    /// Notes where a value starts, when it is an array element (object values are noted with
    /// their keys).
    @inline(__always) private mutating func valueStarts() {
        if top.kind == .array { slots.append(output.count) }
    }

    mutating func null() {
        valueStarts()
        output.append(ValueTag.null)
    }

    mutating func bool(_ value: Bool) {
        valueStarts()
        output.append(value ? ValueTag.trueValue : ValueTag.falseValue)
    }

    mutating func integer(_ value: Int64) {
        valueStarts()
        if let small = Int8(exactly: value) {
            writeNumber(ValueTag.int8, small)
        } else if let medium = Int16(exactly: value) {
            writeNumber(ValueTag.int16, medium)
        } else if let large = Int32(exactly: value) {
            writeNumber(ValueTag.int32, large)
        } else {
            writeNumber(ValueTag.int64, value)
        }
    }

    mutating func double(_ value: Double) {
        valueStarts()
        writeNumber(ValueTag.double, value.bitPattern)
    }

    mutating func largeInteger(_ value: LargeInteger) {
        valueStarts()
        var text = value.text
        text.withUTF8 { writeString(tag: ValueTag.largeInteger, $0) }
    }

    mutating func string(_ utf8: UnsafeBufferPointer<UInt8>) {
        valueStarts()
        writeString(tag: ValueTag.string, utf8)
    }

    mutating func beginObject() { open(.object) }
    mutating func beginArray() { open(.array) }

    mutating func key(_ utf8: UnsafeBufferPointer<UInt8>) {
        let length = utf8.count
        output.reserve(Self.longestVarint + length)
        let keyStart = output.count
        let lengthPrefix = output.pointer + keyStart
        let keyBytes = Self.writeVarint(length, at: lengthPrefix)
        Self.copy(utf8, to: keyBytes)
        if top.inOrder, top.lastKeyCount >= 0,
            !Self.precedes(UnsafeBufferPointer(start: output.pointer + top.lastKey, count: top.lastKeyCount), utf8)
        {
            top.inOrder = false
        }
        top.lastKey = keyStart + (keyBytes - lengthPrefix)
        top.lastKeyCount = length
        output.moveEnd(by: keyBytes - lengthPrefix + length)
        slots.reserve(2)
        slots.pointer[slots.count] = keyStart
        slots.pointer[slots.count + 1] = output.count
        slots.moveEnd(by: 2)
    }

    mutating func endObject() {
        guard top.kind == .object else { return }
        let frame = top
        top = enclosing.removeLast()
        if !frame.inOrder { sortEntries(of: frame) }
        close(frame, dictionary: true)
    }

    mutating func endArray() {
        guard top.kind == .array else { return }
        let frame = top
        top = enclosing.removeLast()
        close(frame, dictionary: false)
    }

    // MARK: - Writing

    @inline(__always) private mutating func writeNumber<Number: FixedWidthInteger>(_ tag: UInt8, _ number: Number) {
        output.reserve(1 + MemoryLayout<Number>.size)
        let position = UnsafeMutableRawPointer(output.pointer + output.count)
        position.storeBytes(of: tag, as: UInt8.self)
        position.storeBytes(of: number.littleEndian, toByteOffset: 1, as: Number.self)
        output.moveEnd(by: 1 + MemoryLayout<Number>.size)
    }

    /// A tag, a varint length and the bytes: one capacity check, then stores.
    @inline(__always) private mutating func writeString(tag: UInt8, _ utf8: UnsafeBufferPointer<UInt8>) {
        let length = utf8.count
        output.reserve(1 + Self.longestVarint + length)
        let tagPosition = output.pointer + output.count
        tagPosition.initialize(to: tag)
        let stringBytes = Self.writeVarint(length, at: tagPosition + 1)
        Self.copy(utf8, to: stringBytes)
        output.moveEnd(by: stringBytes - tagPosition + length)
    }

    /// Copies `source` to `destination`, which has room for it: short runs (most keys and
    /// values) with two overlapping word moves inside both regions, instead of a call.
    @inline(__always) private static func copy(_ source: UnsafeBufferPointer<UInt8>, to destination: UnsafeMutablePointer<UInt8>) {
        guard let from = source.baseAddress else { return }
        let count = source.count
        let to = UnsafeMutableRawPointer(destination)
        let raw = UnsafeRawPointer(from)
        if count >= 8 && count <= 16 {
            let head = raw.loadUnaligned(as: UInt64.self)
            let tail = raw.loadUnaligned(fromByteOffset: count - 8, as: UInt64.self)
            to.storeBytes(of: head, as: UInt64.self)
            to.storeBytes(of: tail, toByteOffset: count - 8, as: UInt64.self)
        } else if count >= 4 && count < 8 {
            let head = raw.loadUnaligned(as: UInt32.self)
            let tail = raw.loadUnaligned(fromByteOffset: count - 4, as: UInt32.self)
            to.storeBytes(of: head, as: UInt32.self)
            to.storeBytes(of: tail, toByteOffset: count - 4, as: UInt32.self)
        } else {
            destination.initialize(from: from, count: count)
        }
    }

    /// Writes an unsigned LEB128 length (one byte below 128) at `position`, which has room for
    /// ``longestVarint`` bytes; returns the position after it.
    @inline(__always) private static func writeVarint(_ value: Int, at position: UnsafeMutablePointer<UInt8>) -> UnsafeMutablePointer<UInt8>
    {
        var remaining = UInt(value)
        var cursor = position
        while remaining >= 0x80 {
            cursor.initialize(to: UInt8(truncatingIfNeeded: remaining) | 0x80)
            cursor += 1
            remaining >>= 7
        }
        cursor.initialize(to: UInt8(remaining))
        return cursor + 1
    }

    /// The UTF-8 bytes of the key whose length prefix starts at `position` (written by ``key(_:)``).
    private func key(at position: Int) -> UnsafeBufferPointer<UInt8> {
        ValueEncoder.writtenKey(in: UnsafeBufferPointer(start: output.pointer, count: output.count), at: position)
    }

    // MARK: - Containers

    /// Opens a container, leaving room for its header as guessed from the previous value.
    private mutating func open(_ kind: Frame.Kind) {
        valueStarts()
        let ordinal = opened
        opened += 1
        var reserved = Self.smallestHeader
        if let headerGuesses, ordinal < headerGuesses.count { reserved = max(headerGuesses[ordinal], reserved) }
        let start = output.count
        output.reserve(reserved)
        output.moveEnd(by: reserved)  // written when the container closes
        enclosing.append(top)
        top = Frame(start: start, contentStart: output.count, firstSlot: slots.count, ordinal: ordinal, kind: kind)
    }

    /// Writes the header of `frame`'s container in front of its contents, which already lie in
    /// canonical order: in the room left for it, or after moving the contents when that room
    /// was not the header's size. Drops the container's slots.
    private mutating func close(_ frame: Frame, dictionary: Bool) {
        let slotCount = slots.count - frame.firstSlot
        let contentSize = output.count - frame.contentStart
        let narrow = Self.smallestHeader + slotCount * 2 + contentSize <= Int(UInt16.max)
        let width = ValueTag.fieldWidth(narrow: narrow)
        let header = ValueTag.headerSize(narrow: narrow) + slotCount * width
        if headerGuesses != nil, frame.ordinal < Self.guessedContainers { headerGuesses?[frame.ordinal] = header }
        let shift = frame.start + header - frame.contentStart
        if shift != 0 {
            if shift > 0 { output.reserve(shift) }
            let contents = output.pointer + frame.contentStart
            (contents + shift).update(from: contents, count: contentSize)  // regions may overlap
            output.moveEnd(by: shift)
        }
        // Every field fits its width: the contents are bounded (the parser's input is at most
        // `JSON.maximumBinaryInput`), narrow fields only when the whole container is under 64 KiB.
        let base = UnsafeMutableRawPointer(output.pointer + frame.start)
        base.storeBytes(of: ValueTag.container(dictionary: dictionary, narrow: narrow), as: UInt8.self)
        let count = dictionary ? slotCount / 2 : slotCount
        if narrow {
            writeFields(UInt16.self, at: base, size: header + contentSize, count: count, frame: frame, header: header)
        } else {
            writeFields(UInt32.self, at: base, size: header + contentSize, count: count, frame: frame, header: header)
        }
        slots.truncate(to: frame.firstSlot)
    }

    /// Writes a header's fields after its tag at `base`, each a `Field`: total size, count, and
    /// the offset of each slot target of `frame`, from the tag.
    @inline(__always) private func writeFields<Field: FixedWidthInteger>(
        _: Field.Type, at base: UnsafeMutableRawPointer, size: Int, count: Int, frame: Frame, header: Int
    ) {
        let width = MemoryLayout<Field>.size
        base.storeBytes(of: Field(truncatingIfNeeded: size).littleEndian, toByteOffset: 1, as: Field.self)
        base.storeBytes(of: Field(truncatingIfNeeded: count).littleEndian, toByteOffset: 1 + width, as: Field.self)
        let firstTarget = frame.contentStart - header  // a target's offset is `target - firstTarget`
        var field = base + 1 + 2 * width
        for index in frame.firstSlot..<slots.count {
            field.storeBytes(of: Field(truncatingIfNeeded: slots[index] - firstTarget).littleEndian, as: Field.self)
            field += width
        }
    }

    /// Puts the entries of an object whose keys arrived out of order in key order, keeping only
    /// the last of a repeated key (as JSON readers do), and rewrites its slots to match.
    private mutating func sortEntries(of frame: Frame) {
        let first = frame.firstSlot
        let count = (slots.count - first) / 2
        let keyStarts = (0..<count).map { slots[first + 2 * $0] }
        let valueStarts = (0..<count).map { slots[first + 2 * $0 + 1] }
        let contentEnd = output.count
        func end(_ index: Int) -> Int { index + 1 < count ? keyStarts[index + 1] : contentEnd }
        func order(_ left: Int, _ right: Int) -> Int {
            let a = key(at: keyStarts[left])
            let b = key(at: keyStarts[right])
            for index in 0..<min(a.count, b.count) where a[index] != b[index] { return a[index] < b[index] ? -1 : 1 }
            return a.count == b.count ? 0 : (a.count < b.count ? -1 : 1)
        }
        let sorted = (0..<count).sorted { left, right in
            let result = order(left, right)
            return result < 0 || (result == 0 && left < right)
        }
        var kept: [Int] = []
        kept.reserveCapacity(count)
        for (position, index) in sorted.enumerated() {
            if position + 1 < sorted.count, order(sorted[position + 1], index) == 0 { continue }
            kept.append(index)
        }
        let contents = Array(UnsafeBufferPointer(start: output.pointer + frame.contentStart, count: output.count - frame.contentStart))
        output.truncate(to: frame.contentStart)
        slots.truncate(to: first)
        contents.withUnsafeBufferPointer { contents in
            for index in kept {
                let from = keyStarts[index] - frame.contentStart
                slots.append(output.count)
                slots.append(output.count + valueStarts[index] - keyStarts[index])
                output.append(UnsafeBufferPointer(rebasing: contents[from..<(end(index) - frame.contentStart)]))
            }
        }
    }

    /// Whether `a` sorts strictly before `b` by bytes.
    private static func precedes(_ a: UnsafeBufferPointer<UInt8>, _ b: UnsafeBufferPointer<UInt8>) -> Bool {
        let common = min(a.count, b.count)
        var index = 0
        while index < common {
            if a[index] != b[index] { return a[index] < b[index] }
            index += 1
        }
        return a.count < b.count
    }
}
