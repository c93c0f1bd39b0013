/// The newest entries of one collection's sequence index, packed into one small value of LMDB's
/// main database (``StoreLayout/sequenceTailKey(_:)``), and read where the value lies: no copy.
///
/// The entries follow one another in sequence order, each one
/// `sequence (u64, big-endian)`, `id length (u8)`, `flags (u8; 1: deleted)`, `id` — what a
/// `sequences` entry holds in its key and value — and zeros fill the value up to a multiple of
/// ``capacityStep`` bytes (an entry's sequence is never 0, so a zero sequence ends the entries).
/// ``SequenceIndex`` keeps a collection's newest entries here until enough of them can move to
/// the table together (see ``StoreLayout``).
///
/// The value grows in steps so that most saves rewrite it at its size: LMDB then writes a value
/// where it lies, where a new size deletes the entry from its page and inserts it again (about
/// three times the instructions, on every save).
///
/// The bounds keep the value far below LMDB's largest value in a page (about 2 KB on 4 KB pages)
/// and leave room on the main database's one page for several collections' tails beside the
/// tables' records and the counters: a tail that spilled the main database onto more pages would
/// cost the pages it saves.
///
/// The bytes come from the file: every read checks its bounds and the order of the sequences,
/// and a malformed tail throws `.corruption`.
struct SequenceTail {
    /// The most bytes a tail holds.
    static let maximumBytes = 512
    /// The most entries a tail holds.
    static let maximumEntries = 32
    /// Longer ids go to the `sequences` table: a few of them would fill the tail.
    static let maximumIDLength = 96
    /// Sequence, id length and flags.
    static let entryHeaderSize = 10
    /// The stored value's size is a multiple of this (``storedSize(of:)``).
    static let capacityStep = 128

    /// The size of the value that holds `used` bytes of entries: a multiple of ``capacityStep``,
    /// at most ``maximumBytes`` for at most as many bytes of entries.
    static func storedSize(of used: Int) -> Int {
        (used + capacityStep - 1) / capacityStep * capacityStep
    }

    /// One entry, read in place.
    struct Entry {
        let sequence: UInt64
        let isDeleted: Bool
        /// The document id's UTF-8 bytes, valid while the tail's bytes are.
        let id: UnsafeRawBufferPointer
    }

    let bytes: UnsafeRawBufferPointer

    /// A collection without a stored tail (a new one, or one of a format-3 file) has this one.
    static var empty: SequenceTail { SequenceTail(bytes: UnsafeRawBufferPointer(start: nil, count: 0)) }

    /// The oldest sequence of the tail, nil when it is empty; checked by ``forEach(_:)`` only.
    var firstSequence: UInt64? {
        guard bytes.count >= 8 else { return nil }
        let first = Self.sequence(in: bytes, at: 0)
        return first == 0 ? nil : first
    }

    /// Calls `body` with every entry in sequence order, until it returns false.
    func forEach(_ body: (Entry) throws -> Bool) throws {
        _ = try walk { offset, end, sequence in
            try body(
                Entry(
                    sequence: sequence, isDeleted: bytes[offset + 9] & 1 != 0,
                    id: UnsafeRawBufferPointer(rebasing: bytes[(offset + Self.entryHeaderSize)..<end])))
        }
    }

    /// What a writer needs of the tail before changing it: where its entries end (`used`), how
    /// many there are, the last sequence (0: none), and where the entry of `sequence` lies, if
    /// there. Every save asks, so no entry value is made.
    func layout(finding sequence: UInt64?) throws -> (used: Int, count: Int, last: UInt64, found: Range<Int>?) {
        var count = 0
        var last: UInt64 = 0
        var found: Range<Int>?
        let used = try walk { offset, end, current in
            if current == sequence { found = offset..<end }
            last = current
            count += 1
            return true
        }
        return (used, count, last, found)
    }

    /// Calls `visit` with the start, end and sequence of every entry in order, until it returns
    /// false, checking bounds and order on the way; returns where the entries visited end.
    @inline(__always)
    private func walk(_ visit: (Int, Int, UInt64) throws -> Bool) throws -> Int {
        var offset = 0
        var previous: UInt64 = 0
        while bytes.count - offset >= Self.entryHeaderSize {
            let sequence = Self.sequence(in: bytes, at: offset)
            if sequence == 0 { return offset }  // the padding
            let end = offset + Self.entryHeaderSize + Int(bytes[offset + 8])
            guard end <= bytes.count else { throw Self.malformed("an id runs past its end") }
            guard sequence > previous else { throw Self.malformed("sequence \(sequence) follows \(previous)") }
            previous = sequence
            if try !visit(offset, end, sequence) { return end }
            offset = end
        }
        // Fewer bytes than an entry's header are left: padding only.
        guard bytes[offset...].allSatisfy({ $0 == 0 }) else { throw Self.malformed("an entry is cut short") }
        return offset
    }

    /// The entry of `sequence`, or nil.
    func entry(_ sequence: UInt64) throws -> Entry? {
        var found: Entry?
        try forEach { entry in
            if entry.sequence == sequence { found = entry }
            return entry.sequence < sequence
        }
        return found
    }

    /// The big-endian sequence at `offset`, which has 8 bytes.
    @inline(__always)
    private static func sequence(in bytes: UnsafeRawBufferPointer, at offset: Int) -> UInt64 {
        UInt64(bigEndian: bytes.loadUnaligned(fromByteOffset: offset, as: UInt64.self))
    }

    /// Writes the entry of `sequence` at the start of `buffer`, which has room for it
    /// (``entryHeaderSize`` + `id.count` bytes, an id of at most ``maximumIDLength`` bytes).
    static func write(sequence: UInt64, isDeleted: Bool, id: UnsafeRawBufferPointer, into buffer: UnsafeMutableRawBufferPointer) {
        buffer.storeBytes(of: sequence.bigEndian, as: UInt64.self)
        buffer[8] = UInt8(id.count)
        buffer[9] = isDeleted ? 1 : 0
        if let base = id.baseAddress { (buffer.baseAddress! + entryHeaderSize).copyMemory(from: base, byteCount: id.count) }
    }

    private static func malformed(_ problem: String) -> CouchetteError {
        CouchetteError(.corruption, "malformed sequence tail: \(problem)")
    }
}
