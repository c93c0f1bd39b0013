/// The short strings (at most 15 UTF-8 bytes, which Swift keeps inline) that this thread's
/// conversions to `[String: Any]` made lately, by their stored bytes: a value met again (a state,
/// a city, a tag, `"female"`) is copied from here instead of being validated and built again.
///
/// A direct-mapped table of ``slotCount`` entries, each the bytes as two zero-padded words, their
/// count and the string made from them. A lookup is a few loads, a multiply and two compares
/// (building a short string from UTF-8 costs about five times that), and a miss replaces the slot.
/// The bytes are compared exactly, so a hit returns what `String(decoding:as:)` would: ill-formed
/// bytes repaired the same way. One per thread, owned by that thread's ``DictionaryShapes``, so
/// it needs no lock; a struct over one allocation, so passing it down a walk retains nothing. Its
/// owner calls ``release()`` once, when the thread ends.
struct ShortStrings {
    private struct Entry {
        var low: UInt64 = 0
        var high: UInt64 = 0
        /// Number of bytes; -1 for an empty slot (the empty string is a valid entry).
        var count = -1
        var string = ""
    }

    private static let slotBits = 8
    static let slotCount = 1 << slotBits
    /// Longer strings are made as usual: Swift stores them on the heap anyway, and they rarely repeat.
    static let maximumBytes = 15

    private let entries: UnsafeMutablePointer<Entry>

    init() {
        entries = .allocate(capacity: Self.slotCount)
        entries.initialize(repeating: Entry(), count: Self.slotCount)
    }

    /// Frees the table; no copy of this value may be used afterwards.
    func release() {
        entries.deinitialize(count: Self.slotCount)
        entries.deallocate()
    }

    /// The string of the UTF-8 bytes `range` of `buffer` (at most ``maximumBytes`` of them),
    /// ill-formed sequences repaired.
    @inline(__always)
    func string(_ range: Range<Int>, in buffer: UnsafeRawBufferPointer) -> String {
        let count = range.count
        let low = count == 0 ? 0 : DictionaryShapes.word(buffer, at: range.lowerBound, count: min(count, 8))
        let high = count > 8 ? DictionaryShapes.word(buffer, at: range.lowerBound + 8, count: count - 8) : 0
        let mixed = (low ^ (high &* 0x9E37_79B9_7F4A_7C15) ^ UInt64(count)) &* 0xBF58_476D_1CE4_E5B9
        let entry = entries + Int(truncatingIfNeeded: mixed >> UInt64(64 - Self.slotBits))
        if entry.pointee.count == count, entry.pointee.low == low, entry.pointee.high == high { return entry.pointee.string }
        let made = BorrowedValue.string(UnsafeRawBufferPointer(rebasing: buffer[range]))
        entry.pointee = Entry(low: low, high: high, count: count, string: made)
        return made
    }
}
