/// Transcodes JSON text straight into the binary format (see ``ValueTag``): one pass over the
/// bytes that reads and writes at once, without building values or calling out per value.
///
/// The reading is a loop, not a recursion: open containers wait on an explicit stack, as deep as
/// ``JSON/maximumDepth`` at most (deeper text fails as ``JSONParser`` fails). The text it accepts,
/// and every error (message and offset), are ``JSONParser``'s: both read with ``JSONText``.
///
/// Values are written where they are read, and only their positions are remembered (one flat
/// stack of slot targets for every open container). A container's header goes in front of its
/// contents: room for it is left when the container opens — as much as the container opened at
/// the same place in the previous value needed, so a run of documents of one shape (an import)
/// writes each header in place — and the contents move only when the guess was wrong. An object's
/// entries are sorted only when its keys did not arrive in order (JSON written with sorted keys,
/// like CouchDB's and the benchmark's, never is).
///
/// Bytes go through pointers (``PlainBuffer``), not `Array`s; like them, keep one owner.
struct BinarySink {
    private var output: PlainBuffer<UInt8>
    /// Slot targets of every open container, innermost last: for an array each element's start,
    /// for an object each key's length prefix then its value's start (absolute positions).
    private var slots: PlainBuffer<Int>
    /// The containers open around the innermost one, outermost first.
    private var enclosing: PlainBuffer<Frame>
    /// The header size of the container opened `n`th in the previous value, for the first
    /// containers of a value (0: none seen yet); nil for a sink that writes one value.
    private var headerGuesses: PlainBuffer<Int>?
    /// Reused for every string with escapes, so unescaping allocates nothing once it has grown.
    private var scratch: [UInt8] = []

    /// An open container, while one inside it is open too.
    private struct Frame {
        /// Where the container's tag is.
        var start: Int
        /// Where its contents start: the room left for its header ends here.
        var contentStart: Int
        /// Index in ``slots`` of the container's first slot target.
        var firstSlot: Int
        /// The container's place among those opened in the value (for ``headerGuesses``).
        var ordinal: Int
        /// Where the bytes of the last key start in the output, and how many there are (-1: no
        /// key yet), to check the next one's order without decoding its length again.
        var lastKey: Int
        var lastKeyCount: Int
        var kind: Kind
        /// Keys so far strictly increasing by their UTF-8 bytes (no repeats).
        var inOrder: Bool
    }

    private enum Kind { case top, array, object }

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

    /// A sink for one value, writing into `output` with bookkeeping in memory the caller lends
    /// (see ``PlainBuffer/init(borrowing:)``); without header guesses, which only a run of values
    /// uses.
    private init(output: PlainBuffer<UInt8>, slots: UnsafeMutableBufferPointer<Int>, enclosing: UnsafeMutableBufferPointer<Frame>) {
        self.output = output
        self.slots = PlainBuffer(borrowing: slots)
        self.enclosing = PlainBuffer(borrowing: enclosing)
    }

    /// Output rooms up to this size are taken on the stack (larger ones would make the standard
    /// library ask the system how much stack is left).
    private static let stackOutputLimit = 1024

    /// The binary form of one JSON value (see ``JSON/encodeBinary(utf8:)``), in an array of
    /// exactly its size, with the bookkeeping on the stack — and for a value of usual size the
    /// output too: the array is then the only allocation.
    static func transcode(_ utf8: UnsafeBufferPointer<UInt8>) throws -> [UInt8] {
        try checkSize(of: utf8)  // before the output's room is allocated
        // Room for the usual binary form (a little larger than compact text: each string and key
        // keeps its bytes, each slot takes two); a larger one grows into the sink's own buffer.
        let room = utf8.count + utf8.count / 4 + 64
        return try withUnsafeTemporaryAllocation(of: Int.self, capacity: 128) { slots in
            try withUnsafeTemporaryAllocation(of: Frame.self, capacity: 16) { enclosing in
                // The sink lives only in this closure, as the memory it borrows does.
                guard room <= stackOutputLimit else {
                    var sink = BinarySink(output: PlainBuffer(capacity: room), slots: slots, enclosing: enclosing)
                    try sink.transcode(utf8)
                    return sink.bytes
                }
                return try withUnsafeTemporaryAllocation(of: UInt8.self, capacity: room) { bytes in
                    var sink = BinarySink(output: PlainBuffer(borrowing: bytes), slots: slots, enclosing: enclosing)
                    try sink.transcode(utf8)
                    return sink.bytes
                }
            }
        }
    }

    /// Refuses text over ``JSON/maximumBinaryInput``. The binary form is at most a few times the
    /// text (a one-digit array element takes two bytes of text and six encoded): bounding the text
    /// keeps every offset within 32 bits, which the transcoder's unchecked arithmetic relies on.
    private static func checkSize(of utf8: UnsafeBufferPointer<UInt8>) throws {
        guard utf8.count <= JSON.maximumBinaryInput else {
            throw CouchetteError(
                .invalidParameter, "JSON text of \(utf8.count) bytes is too large to store (the limit is \(JSON.maximumBinaryInput))")
        }
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
    }

    /// Replaces what was written by a value already in the binary format.
    mutating func replace(with encoded: [UInt8]) {
        reset()
        encoded.withUnsafeBufferPointer { output.append($0) }
    }

    // MARK: - Transcoding

    /// The state of one transcoding, in one value the loop keeps in registers: the input and
    /// where the reading is, the output and slot buffers through local copies of their pointers
    /// and ends, and the innermost open container (kind `.top` outside every one).
    private struct Reader {
        let input: UnsafePointer<UInt8>
        let count: Int
        var position = 0
        var out: UnsafeMutablePointer<UInt8>
        var outEnd = 0
        var outCapacity: Int
        var slot: UnsafeMutablePointer<Int>
        var slotEnd = 0
        var slotCapacity: Int
        let guesses: UnsafeMutablePointer<Int>?
        var kind = Kind.top
        var start = 0
        var contentStart = 0
        var firstSlot = 0
        var ordinal = 0
        var lastKey = 0
        var lastKeyCount = -1
        var inOrder = true
        /// Containers open, and opened since the value began.
        var depth = 0
        var opened = 0

        /// The innermost container, to wait on the stack while one inside it is open.
        var frame: Frame {
            Frame(
                start: start, contentStart: contentStart, firstSlot: firstSlot, ordinal: ordinal, lastKey: lastKey,
                lastKeyCount: lastKeyCount, kind: kind, inOrder: inOrder)
        }

        @inline(__always) mutating func resume(_ outer: Frame) {
            (kind, start, contentStart, firstSlot, ordinal) = (outer.kind, outer.start, outer.contentStart, outer.firstSlot, outer.ordinal)
            (lastKey, lastKeyCount, inOrder) = (outer.lastKey, outer.lastKeyCount, outer.inOrder)
        }

        @inline(__always) mutating func skipWhitespace() {
            if position < count && input[position] <= 0x20 { position = JSONText.whitespaceEnd(input, count: count, from: position) }
        }

        /// Whether the byte at ``position`` exists and is `expected`.
        @inline(__always) func isAt(_ expected: UInt8) -> Bool { position < count && input[position] == expected }
    }

    /// Replaces what was written by the binary form of the JSON value in `utf8`. Throws
    /// `.invalidParameter` naming the byte offset of the first problem, as ``JSONParser`` does;
    /// what was written is then undefined until the next call.
    ///
    /// One loop over the text: each turn reads a value — a scalar is written at once, a container
    /// is opened — then closes the containers that end after it and reads the punctuation (and
    /// key) up to the next value. Each write comes after one capacity check.
    mutating func transcode(_ utf8: UnsafeBufferPointer<UInt8>) throws {
        try Self.checkSize(of: utf8)
        reset()
        guard let input = utf8.baseAddress, !utf8.isEmpty else { throw JSONText.error("unexpected end of input", at: 0) }
        var r = Reader(
            input: input, count: utf8.count, out: output.pointer, outCapacity: output.capacity, slot: slots.pointer,
            slotCapacity: slots.capacity, guesses: headerGuesses?.pointer)
        // Whether a key comes before the next value: after an object's `{` or `,`.
        var keyNext = false
        value: while true {
            if keyNext {
                try readKey(&r)
                keyNext = false
            }
            // At a value. Whitespace is skipped where it is met: compact JSON has none.
            if r.position < r.count && r.input[r.position] <= 0x20 { r.skipWhitespace() }
            guard r.depth < JSON.maximumDepth else { throw JSONText.nestingError(at: r.position) }
            guard r.position < r.count else { throw JSONText.error("unexpected end of input", at: r.position) }
            if r.kind == .array { addSlot(r.outEnd, &r) }
            let byte = r.input[r.position]
            switch byte {
            case UInt8(ascii: "\""):
                try readString(tag: ValueTag.string, &r)
            case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
                try readNumber(&r)
            case UInt8(ascii: "{"), UInt8(ascii: "["):
                let isObject = byte == UInt8(ascii: "{")
                open(isObject ? .object : .array, &r)
                r.skipWhitespace()
                if r.isAt(isObject ? UInt8(ascii: "}") : UInt8(ascii: "]")) {
                    r.position &+= 1
                    close(&r)
                } else {
                    keyNext = isObject
                    continue value
                }
            case UInt8(ascii: "t"):
                r.position = try JSONText.literalEnd("true", r.input, count: r.count, at: r.position)
                writeByte(ValueTag.trueValue, &r)
            case UInt8(ascii: "f"):
                r.position = try JSONText.literalEnd("false", r.input, count: r.count, at: r.position)
                writeByte(ValueTag.falseValue, &r)
            case UInt8(ascii: "n"):
                r.position = try JSONText.literalEnd("null", r.input, count: r.count, at: r.position)
                writeByte(ValueTag.null, &r)
            default:
                throw JSONText.unexpectedCharacter(byte, at: r.position)
            }
            // After a value: close the containers it ends, up to a `,` (and the next key).
            while true {
                if r.position < r.count && r.input[r.position] <= 0x20 { r.skipWhitespace() }
                if r.kind == .top {
                    guard r.position == r.count else { throw JSONText.error("unexpected text after the JSON value", at: r.position) }
                    output.moveEnd(by: r.outEnd - output.count)
                    return
                }
                let isObject = r.kind == .object
                guard r.position < r.count else {
                    throw JSONText.error(isObject ? "unterminated object" : "unterminated array", at: r.position)
                }
                let next = r.input[r.position]
                r.position &+= 1
                if next == UInt8(ascii: ",") {
                    keyNext = isObject
                    continue value
                }
                guard next == (isObject ? UInt8(ascii: "}") : UInt8(ascii: "]")) else {
                    throw JSONText.error(isObject ? "expected ',' or '}'" : "expected ',' or ']'", at: r.position &- 1)
                }
                close(&r)
            }
        }
    }

    @inline(__always) private mutating func reserveOutput(_ extra: Int, _ r: inout Reader) {
        if _slowPath(r.outCapacity &- r.outEnd < extra) { (r.out, r.outCapacity) = growOutput(end: r.outEnd, toHold: r.outEnd + extra) }
    }

    /// Notes an element's start.
    @inline(__always) private mutating func addSlot(_ target: Int, _ r: inout Reader) {
        if _slowPath(r.slotCapacity &- r.slotEnd < 2) { (r.slot, r.slotCapacity) = growSlots(end: r.slotEnd) }
        r.slot[r.slotEnd] = target
        r.slotEnd &+= 1
    }

    /// Notes a key's start and its value's, after one capacity check.
    @inline(__always) private mutating func addSlots(_ key: Int, _ value: Int, _ r: inout Reader) {
        if _slowPath(r.slotCapacity &- r.slotEnd < 2) { (r.slot, r.slotCapacity) = growSlots(end: r.slotEnd) }
        r.slot[r.slotEnd] = key
        r.slot[r.slotEnd &+ 1] = value
        r.slotEnd &+= 2
    }

    @inline(__always) private mutating func writeByte(_ byte: UInt8, _ r: inout Reader) {
        reserveOutput(1, &r)
        r.out[r.outEnd] = byte
        r.outEnd &+= 1
    }

    /// Writes an unescaped string's bytes (a key's when `tag` is nil) after its tag and length.
    @inline(__always) private mutating func writeString(tag: UInt8?, _ bytes: UnsafePointer<UInt8>, _ length: Int, _ r: inout Reader) {
        reserveOutput(1 + Self.longestVarint + length, &r)
        if let tag {
            r.out[r.outEnd] = tag
            r.outEnd &+= 1
        }
        r.outEnd = Self.writeVarint(length, at: r.out, r.outEnd)
        Self.copy(bytes, to: r.out + r.outEnd, count: length)
        r.outEnd &+= length
    }

    /// Reads the string whose opening quote is at the reader's position and writes it (a key
    /// when `tag` is nil): a plain one straight from the input, one with escapes through
    /// ``scratch``.
    @inline(__always) private mutating func readString(tag: UInt8?, _ r: inout Reader) throws {
        let first = r.position &+ 1
        let stop = JSONText.plainRunEnd(r.input, count: r.count, from: first)
        if stop < r.count && r.input[stop] == UInt8(ascii: "\"") {
            writeString(tag: tag, r.input + first, stop &- first, &r)
            r.position = stop &+ 1
        } else {
            try readEscapedString(tag: tag, from: first, stop: stop, &r)
        }
    }

    /// ``readString(tag:_:)`` for a string with escapes (or none that ends).
    @inline(never) private mutating func readEscapedString(tag: UInt8?, from first: Int, stop: Int, _ r: inout Reader) throws {
        r.position = try JSONText.unescape(r.input, count: r.count, start: first, stop: stop, into: &scratch)
        let unescaped = scratch
        unescaped.withUnsafeBufferPointer { writeString(tag: tag, $0.baseAddress ?? r.input, $0.count, &r) }
    }

    /// Reads a key (after its object's `{` or `,`) and its `:`.
    @inline(__always) private mutating func readKey(_ r: inout Reader) throws {
        if !r.isAt(UInt8(ascii: "\"")) {
            r.skipWhitespace()
            guard r.isAt(UInt8(ascii: "\"")) else { throw JSONText.error("expected a key string", at: r.position) }
        }
        let keyStart = r.outEnd
        try readString(tag: nil, &r)
        // The key's bytes end the output, after their length.
        let keyBytes = Self.varintEnd(r.out, keyStart)
        let keyCount = r.outEnd &- keyBytes
        if r.inOrder && r.lastKeyCount >= 0 && !Self.precedes(r.out + r.lastKey, r.lastKeyCount, r.out + keyBytes, keyCount) {
            r.inOrder = false
        }
        r.lastKey = keyBytes
        r.lastKeyCount = keyCount
        addSlots(keyStart, r.outEnd, &r)
        if !r.isAt(UInt8(ascii: ":")) {
            r.skipWhitespace()
            guard r.isAt(UInt8(ascii: ":")) else { throw JSONText.error("expected ':'", at: r.position) }
        }
        r.position &+= 1
    }

    @inline(__always) private mutating func readNumber(_ r: inout Reader) throws {
        reserveOutput(9, &r)
        if let (integer, end) = JSONText.plainInteger(r.input, count: r.count, at: r.position) {
            r.outEnd = Self.writeInteger(integer, at: r.out, r.outEnd)
            r.position = end
            return
        }
        let (number, end) = try JSONText.number(r.input, count: r.count, at: r.position)
        r.position = end
        switch number {
        case .integer(let integer):
            r.outEnd = Self.writeInteger(integer, at: r.out, r.outEnd)
        case .double(let double):
            r.out[r.outEnd] = ValueTag.double
            UnsafeMutableRawPointer(r.out + (r.outEnd &+ 1)).storeBytes(of: double.bitPattern.littleEndian, as: UInt64.self)
            r.outEnd &+= 9
        case .largeInteger(let large):
            var text = large.text
            text.withUTF8 { digits in writeString(tag: ValueTag.largeInteger, digits.baseAddress ?? r.input, digits.count, &r) }
        }
    }

    /// Opens a container at the reader's position, leaving room for its header as guessed from
    /// the previous value.
    @inline(__always) private mutating func open(_ kind: Kind, _ r: inout Reader) {
        var reserved = Self.smallestHeader
        if let guesses = r.guesses, r.opened < Self.guessedContainers { reserved = max(guesses[r.opened], reserved) }
        reserveOutput(reserved, &r)
        enclosing.append(r.frame)
        r.kind = kind
        r.start = r.outEnd
        r.outEnd &+= reserved  // the header is written when the container closes
        r.contentStart = r.outEnd
        r.firstSlot = r.slotEnd
        r.ordinal = r.opened
        r.opened &+= 1
        r.lastKeyCount = -1
        r.inOrder = true
        r.depth &+= 1
        r.position &+= 1
    }

    /// Writes the innermost container's header in front of its contents (which then lie in
    /// canonical order): in the room left for it, or after moving the contents when that room
    /// was not the header's size. Drops its slots and makes the container around it innermost.
    @inline(__always) private mutating func close(_ r: inout Reader) {
        let dictionary = r.kind == .object
        if dictionary && !r.inOrder { sortEntries(&r) }
        let slotCount = r.slotEnd &- r.firstSlot
        let contentSize = r.outEnd &- r.contentStart
        let narrow = Self.smallestHeader &+ slotCount &* ValueTag.fieldWidth(narrow: true) &+ contentSize <= Int(UInt16.max)
        let header = ValueTag.headerSize(narrow: narrow) &+ slotCount &* ValueTag.fieldWidth(narrow: narrow)
        if let guesses = r.guesses, r.ordinal < Self.guessedContainers { guesses[r.ordinal] = header }
        let shift = r.start &+ header &- r.contentStart
        if shift != 0 {
            if shift > 0 { reserveOutput(shift, &r) }
            let contents = r.out + r.contentStart
            (contents + shift).update(from: contents, count: contentSize)  // regions may overlap
            r.outEnd &+= shift
        }
        // Every field fits its width: the contents are bounded (the input is at most
        // `JSON.maximumBinaryInput`), narrow fields only when the whole container is under 64 KiB.
        let base = UnsafeMutableRawPointer(r.out + r.start)
        base.storeBytes(of: ValueTag.container(dictionary: dictionary, narrow: narrow), as: UInt8.self)
        let entries = dictionary ? slotCount &>> 1 : slotCount
        let targets = UnsafePointer(r.slot + r.firstSlot)
        // A target's offset from the tag: its position now, less the tag's.
        let firstTarget = r.contentStart &- header
        if narrow {
            Self.writeFields(UInt16.self, at: base, size: header &+ contentSize, count: entries, targets, slotCount, from: firstTarget)
        } else {
            Self.writeFields(UInt32.self, at: base, size: header &+ contentSize, count: entries, targets, slotCount, from: firstTarget)
        }
        r.slotEnd = r.firstSlot
        r.resume(enclosing.removeLast())
        r.depth &-= 1
    }

    /// Moves the output to a larger buffer holding `needed` bytes, its first `end` written;
    /// returns where it is and its capacity.
    @inline(never) private mutating func growOutput(end: Int, toHold needed: Int) -> (UnsafeMutablePointer<UInt8>, Int) {
        output.moveEnd(by: end - output.count)
        output.reserve(needed - end)
        return (output.pointer, output.capacity)
    }

    /// ``growOutput(end:toHold:)`` for the slot targets, full at `end`.
    @inline(never) private mutating func growSlots(end: Int) -> (UnsafeMutablePointer<Int>, Int) {
        slots.moveEnd(by: end - slots.count)
        slots.reserve(2)
        return (slots.pointer, slots.capacity)
    }

    // MARK: - Writing

    /// Writes `integer` at `end` in its narrowest form (room for nine bytes reserved); returns
    /// the new end. All eight little-endian bytes are stored, and the end moves past the ones the
    /// form keeps (the narrower form's bytes are the first ones of the wider form's).
    @inline(__always) private static func writeInteger(_ integer: Int64, at out: UnsafeMutablePointer<UInt8>, _ end: Int) -> Int {
        let (tag, size) = ValueEncoder.integerForm(of: integer)
        out[end] = tag
        UnsafeMutableRawPointer(out + (end &+ 1)).storeBytes(of: integer.littleEndian, as: Int64.self)
        return end &+ 1 &+ size
    }

    /// Copies `count` bytes to `destination`, which has room for them: short runs (most keys and
    /// values) with a few overlapping loads and stores inside both regions, instead of a call.
    @inline(__always) private static func copy(_ source: UnsafePointer<UInt8>, to destination: UnsafeMutablePointer<UInt8>, count: Int) {
        let from = UnsafeRawPointer(source)
        let to = UnsafeMutableRawPointer(destination)
        if count >= 8 && count <= 16 {
            let head = from.loadUnaligned(as: UInt64.self)
            let tail = from.loadUnaligned(fromByteOffset: count &- 8, as: UInt64.self)
            to.storeBytes(of: head, as: UInt64.self)
            to.storeBytes(of: tail, toByteOffset: count &- 8, as: UInt64.self)
        } else if count >= 4 && count < 8 {
            let head = from.loadUnaligned(as: UInt32.self)
            let tail = from.loadUnaligned(fromByteOffset: count &- 4, as: UInt32.self)
            to.storeBytes(of: head, as: UInt32.self)
            to.storeBytes(of: tail, toByteOffset: count &- 4, as: UInt32.self)
        } else if count > 0 && count < 4 {
            // The first, middle and last byte cover one to three bytes.
            let middle = source[count &>> 1]
            let last = source[count &- 1]
            destination[0] = source[0]
            destination[count &>> 1] = middle
            destination[count &- 1] = last
        } else if count > 16 {
            destination.update(from: source, count: count)
        }
    }

    /// Writes an unsigned LEB128 length (one byte below 128) at `end`, which has room for
    /// ``longestVarint`` bytes; returns the new end.
    @inline(__always) private static func writeVarint(_ value: Int, at out: UnsafeMutablePointer<UInt8>, _ end: Int) -> Int {
        if value < 0x80 {
            out[end] = UInt8(truncatingIfNeeded: value)
            return end &+ 1
        }
        var remaining = UInt(value)
        var cursor = end
        while remaining >= 0x80 {
            out[cursor] = UInt8(truncatingIfNeeded: remaining) | 0x80
            cursor &+= 1
            remaining >>= 7
        }
        out[cursor] = UInt8(remaining)
        return cursor &+ 1
    }

    /// Where the bytes after the varint written at `position` start.
    @inline(__always) private static func varintEnd(_ out: UnsafeMutablePointer<UInt8>, _ position: Int) -> Int {
        var cursor = position
        while out[cursor] & 0x80 != 0 { cursor &+= 1 }
        return cursor &+ 1
    }

    /// Writes a header's fields after its tag at `base`, each a `Field`: total size, count, and
    /// the offset from the tag of each of the `slotCount` targets (positions less `firstTarget`).
    @inline(__always) private static func writeFields<Field: FixedWidthInteger>(
        _: Field.Type, at base: UnsafeMutableRawPointer, size: Int, count: Int, _ targets: UnsafePointer<Int>, _ slotCount: Int,
        from firstTarget: Int
    ) {
        let width = MemoryLayout<Field>.size
        base.storeBytes(of: Field(truncatingIfNeeded: size).littleEndian, toByteOffset: 1, as: Field.self)
        base.storeBytes(of: Field(truncatingIfNeeded: count).littleEndian, toByteOffset: 1 + width, as: Field.self)
        var field = base + 1 + 2 * width
        for index in 0..<slotCount {
            field.storeBytes(of: Field(truncatingIfNeeded: targets[index] &- firstTarget).littleEndian, as: Field.self)
            field += width
        }
    }

    /// The UTF-8 bytes of the key whose length prefix starts at `position`.
    private func key(at position: Int) -> UnsafeBufferPointer<UInt8> {
        ValueEncoder.writtenKey(in: UnsafeBufferPointer(start: output.pointer, count: output.count), at: position)
    }

    /// Puts the entries of the innermost object, whose keys arrived out of order, in key order,
    /// keeping only the last of a repeated key (as JSON readers do), and rewrites its slots to
    /// match.
    @inline(never) private mutating func sortEntries(_ r: inout Reader) {
        output.moveEnd(by: r.outEnd - output.count)
        slots.moveEnd(by: r.slotEnd - slots.count)
        sortEntries(firstSlot: r.firstSlot, contentStart: r.contentStart)
        (r.out, r.outEnd, r.outCapacity) = (output.pointer, output.count, output.capacity)
        (r.slot, r.slotEnd, r.slotCapacity) = (slots.pointer, slots.count, slots.capacity)
    }

    private mutating func sortEntries(firstSlot first: Int, contentStart: Int) {
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
        let contents = Array(UnsafeBufferPointer(start: output.pointer + contentStart, count: output.count - contentStart))
        output.truncate(to: contentStart)
        slots.truncate(to: first)
        contents.withUnsafeBufferPointer { contents in
            for index in kept {
                let from = keyStarts[index] - contentStart
                slots.append(output.count)
                slots.append(output.count + valueStarts[index] - keyStarts[index])
                output.append(UnsafeBufferPointer(rebasing: contents[from..<(end(index) - contentStart)]))
            }
        }
    }

    /// Whether the `aCount` bytes at `a` sort strictly before the `bCount` bytes at `b`.
    @inline(__always) private static func precedes(_ a: UnsafePointer<UInt8>, _ aCount: Int, _ b: UnsafePointer<UInt8>, _ bCount: Int)
        -> Bool
    {
        let common = min(aCount, bCount)
        var index = 0
        while index < common {
            if a[index] != b[index] { return a[index] < b[index] }
            index &+= 1
        }
        return aCount < bCount
    }
}
