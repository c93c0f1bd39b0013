#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The key sets of the dictionaries this thread converted to `[String: Any]` lately, each kept as
/// a finished Swift dictionary from key to entry number: converting another dictionary with the
/// same keys maps that dictionary's values (`mapValues` keeps the hash table as it is) instead of
/// creating and hashing every key again.
///
/// Documents of one collection mostly share their keys, so `toDictionary()` of the second document
/// onwards finds its shape here; hashing and creating the keys were about a third of a point read.
/// A key set is kept only once it has been seen twice, so a stream of one-off shapes costs a
/// fingerprint per dictionary and nothing else. Every hit compares the stored keys byte for byte:
/// the fingerprint only picks the slot, so crafted keys cannot make a dictionary show another's
/// keys.
///
/// Each shape also remembers, per entry, which shape the dictionary under that key had last time
/// (for an array, its dictionary elements), and the cache which shape the last top-level
/// dictionary had (``rootHint``). A conversion tries that shape first and compares its keys while
/// it walks the entries, so a document like the previous one finds every shape with no
/// fingerprint computed (the fingerprint and a second pass over the keys were a tenth of
/// iterating). A hint is only a fingerprint, never a reference: it names a slot and is checked
/// against that slot's shape, so hints hold no shape alive and form no cycles.
///
/// String values up to 15 bytes come from the same thread's ``ShortStrings``.
///
/// The cache is per thread (a `pthread` key), so it needs no lock and is never shared: a
/// conversion is synchronous and runs on one thread from start to end. Its size is bounded
/// (``slotCount`` shapes of at most ``maximumKeys`` keys and ``maximumKeyBytes`` bytes of keys);
/// the thread's exit releases it.
final class DictionaryShapes {
    /// One key set: its keys' bytes in encoded order, and the dictionary from key to entry number.
    ///
    /// Its tables are plain allocations, not arrays: the walk reads them once per key of every
    /// dictionary converted, with no retain, bounds check or exclusivity check in between.
    final class Shape {
        /// Where one key lies in ``keyBytes``, and its first (up to) eight bytes as a word: most
        /// keys are that short and compare with one load.
        private struct Key {
            var start: Int
            var length: Int
            var first: UInt64
        }

        let fingerprint: UInt64
        /// Number of keys (entries of the dictionaries of this shape).
        let count: Int
        /// The keys' UTF-8 bytes, one after the other, and 8 zero bytes (every key then compares by
        /// whole-word loads).
        private let keyBytes: UnsafeMutableRawPointer
        private let keys: UnsafeMutablePointer<Key>
        /// Per entry: the fingerprint of the shape its dictionary (or its array's dictionaries)
        /// had last time, 0 when none yet.
        let childHints: UnsafeMutablePointer<UInt64>
        /// Key → number of the entry (in encoded order) that holds its value; for a key stored twice
        /// (damaged or hand-made bytes) the later entry, as a conversion that hashes every key keeps.
        let positions: [String: Int]

        init(fingerprint: UInt64, keys: [UnsafeRawBufferPointer]) {
            self.fingerprint = fingerprint
            count = keys.count
            let total = keys.reduce(0) { $0 + $1.count }
            keyBytes = .allocate(byteCount: total + 8, alignment: 8)
            self.keys = .allocate(capacity: keys.count)
            childHints = .allocate(capacity: keys.count)
            childHints.initialize(repeating: 0, count: keys.count)
            var positions = [String: Int](minimumCapacity: keys.count)
            var end = 0
            for (number, key) in keys.enumerated() {
                if let base = key.baseAddress { (keyBytes + end).copyMemory(from: base, byteCount: key.count) }
                (self.keys + number).initialize(to: Key(start: end, length: key.count, first: 0))
                end += key.count
                positions[BorrowedValue.string(key)] = number
            }
            (keyBytes + end).initializeMemory(as: UInt8.self, repeating: 0, count: 8)
            for number in 0..<keys.count where self.keys[number].length > 0 {
                let key = self.keys[number]
                self.keys[number].first =
                    UInt64(littleEndian: keyBytes.loadUnaligned(fromByteOffset: key.start, as: UInt64.self))
                    & DictionaryShapes.mask(min(key.length, 8))
            }
            self.positions = positions
        }

        deinit {
            keyBytes.deallocate()
            keys.deallocate()
            childHints.deallocate()
        }

        /// Whether key number `index` of this shape is exactly the bytes `key` of `buffer`.
        @inline(__always)
        func keyMatches(_ index: Int, _ key: Range<Int>, in buffer: UnsafeRawBufferPointer) -> Bool {
            guard index < count else { return false }
            let kept = keys[index]
            guard kept.length == key.count else { return false }
            guard kept.length > 0 else { return true }
            guard DictionaryShapes.word(buffer, at: key.lowerBound, count: min(kept.length, 8)) == kept.first else { return false }
            return kept.length <= 8 || restMatches(kept, from: key.lowerBound + 8, in: buffer)
        }

        /// The bytes of a key longer than eight past its first eight, compared word by word.
        private func restMatches(_ kept: Key, from position: Int, in buffer: UnsafeRawBufferPointer) -> Bool {
            var mine = kept.start + 8
            let end = kept.start + kept.length
            var theirs = position
            while mine < end {
                let length = min(8, end - mine)
                // Little-endian like `DictionaryShapes.word`, so that the two compare equal on any host.
                let word =
                    UInt64(littleEndian: keyBytes.loadUnaligned(fromByteOffset: mine, as: UInt64.self)) & DictionaryShapes.mask(length)
                guard word == DictionaryShapes.word(buffer, at: theirs, count: length) else { return false }
                mine += length
                theirs += length
            }
            return true
        }

        /// Whether the keys in `entries` of `buffer` are exactly this shape's, in the same order.
        func matches(_ entries: UnsafeMutableBufferPointer<DictionaryShapes.Entry>, in buffer: UnsafeRawBufferPointer) -> Bool {
            guard entries.count == count else { return false }
            for (index, entry) in entries.enumerated() {
                let start = Int(entry.keyStart)
                guard keyMatches(index, start..<(start + Int(entry.keyCount)), in: buffer) else { return false }
            }
            return true
        }
    }

    /// Where one entry of the dictionary being converted lies in its buffer (32-bit fields keep a
    /// full table of ``maximumKeys`` entries within a small stack allocation).
    struct Entry {
        var keyStart: Int32
        var keyCount: Int32
        /// The value's offset in the buffer.
        var value: Int32
    }

    private struct Slot {
        var shape: Shape?
        /// A fingerprint seen once here and not kept yet.
        var pending: UInt64 = 0
    }

    static let slotCount = 64
    /// Dictionaries with more entries are converted by hashing: their table would not fit the
    /// stack allocation of the walk.
    static let maximumKeys = 64
    static let maximumKeyBytes = 4096
    /// Dictionaries nested deeper are converted by hashing, which bounds the stack the walk takes
    /// (each level holds its entry table on the stack).
    static let maximumDepth = 16

    private let slots: UnsafeMutablePointer<Slot>
    /// The fingerprint of the shape the last top-level dictionary converted on this thread had (0:
    /// none): where a conversion of a whole document starts looking.
    let rootHint: UnsafeMutablePointer<UInt64>

    /// Where the children of a dictionary converted without a kept shape keep their hints: one
    /// word they all share, so only a guess, but their own shapes still get found and kept while
    /// their parent's is not (a document's nested shapes are then kept after two documents, as
    /// its top level is).
    let scratchHint: UnsafeMutablePointer<UInt64>

    private init() {
        slots = .allocate(capacity: Self.slotCount)
        slots.initialize(repeating: Slot(), count: Self.slotCount)
        rootHint = .allocate(capacity: 2)
        rootHint.initialize(repeating: 0, count: 2)
        scratchHint = rootHint + 1
    }

    deinit {
        slots.deinitialize(count: Self.slotCount)
        slots.deallocate()
        rootHint.deallocate()
        strings.release()
    }

    /// The short strings this thread's conversions made lately.
    let strings = ShortStrings()

    /// How many fingerprints this cache computed: every conversion of a dictionary whose hint did
    /// not name its shape (tests read it to see that hints work).
    private(set) var fingerprintsComputed = 0

    /// The kept shape a hint names, if it is still kept (its keys are still to be compared).
    @inline(__always)
    func hinted(_ fingerprint: UInt64) -> Shape? {
        guard fingerprint != 0, let shape = slots[Self.slot(fingerprint)].shape, shape.fingerprint == fingerprint else { return nil }
        return shape
    }

    /// The shape kept for `fingerprint` when its keys are exactly those of `entries`.
    private func shape(_ fingerprint: UInt64, matching entries: UnsafeMutableBufferPointer<Entry>, in buffer: UnsafeRawBufferPointer)
        -> Shape?
    {
        guard let shape = slots[Self.slot(fingerprint)].shape, shape.fingerprint == fingerprint,
            shape.matches(entries, in: buffer)
        else { return nil }
        return shape
    }

    /// The kept shape with exactly the keys in `entries` of `buffer`, found by their fingerprint
    /// (or kept now, at its second sighting), which `hint` then names; nil when none is kept (the
    /// miss is noted).
    func lookUp(_ entries: UnsafeMutableBufferPointer<Entry>, in buffer: UnsafeRawBufferPointer, hint: UnsafeMutablePointer<UInt64>)
        -> Shape?
    {
        fingerprintsComputed &+= 1
        let fingerprint = Self.fingerprint(entries, in: buffer)
        guard let kept = shape(fingerprint, matching: entries, in: buffer) ?? noteMiss(fingerprint, entries: entries, in: buffer) else {
            return nil
        }
        hint.pointee = fingerprint
        return kept
    }

    /// Records a conversion that found no shape: the second time in a row that a slot sees the same
    /// fingerprint, the key set is kept, and returned.
    private func noteMiss(_ fingerprint: UInt64, entries: UnsafeMutableBufferPointer<Entry>, in buffer: UnsafeRawBufferPointer) -> Shape? {
        let slot = slots + Self.slot(fingerprint)
        guard slot.pointee.pending == fingerprint else {
            slot.pointee.pending = fingerprint
            return nil
        }
        slot.pointee.pending = 0
        var total = 0
        for entry in entries { total += Int(entry.keyCount) }
        guard total <= Self.maximumKeyBytes else { return nil }
        let keys = entries.map { UnsafeRawBufferPointer(rebasing: buffer[Int($0.keyStart)..<(Int($0.keyStart) + Int($0.keyCount))]) }
        let shape = Shape(fingerprint: fingerprint, keys: keys)
        slot.pointee.shape = shape
        return shape
    }

    private static func slot(_ fingerprint: UInt64) -> Int { Int(truncatingIfNeeded: fingerprint >> 58) & (slotCount - 1) }

    // MARK: - Fingerprints

    /// A fingerprint of the number of keys, their lengths and their bytes, in order; never 0
    /// (which marks an empty slot).
    static func fingerprint(_ entries: UnsafeMutableBufferPointer<Entry>, in buffer: UnsafeRawBufferPointer) -> UInt64 {
        var hash = mix(UInt64(entries.count) &+ 0x9E37_79B9_7F4A_7C15)
        for entry in entries {
            var position = Int(entry.keyStart)
            let end = position + Int(entry.keyCount)
            hash = mix(hash ^ UInt64(entry.keyCount))
            while position < end {
                let length = min(8, end - position)
                hash = mix(hash ^ word(buffer, at: position, count: length))
                position += length
            }
        }
        return hash == 0 ? 1 : hash
    }

    /// The `count` (1...8) bytes at `position` as one little-endian word, zero above them: one load
    /// when 8 bytes can be read there (the bytes behind a key are its value's), else byte by byte.
    @inline(__always)
    static func word(_ buffer: UnsafeRawBufferPointer, at position: Int, count: Int) -> UInt64 {
        if position <= buffer.count - 8 {
            let loaded = UInt64(littleEndian: buffer.loadUnaligned(fromByteOffset: position, as: UInt64.self))
            return loaded & mask(count)
        }
        var word: UInt64 = 0
        for index in (0..<count).reversed() { word = word << 8 | UInt64(buffer[position + index]) }
        return word
    }

    /// The low `count` (1...8) bytes of a word set (a masking shift: no branch for 8).
    @inline(__always)
    static func mask(_ count: Int) -> UInt64 {
        assert((1...8).contains(count), "a mask of 1 to 8 bytes")
        return ~0 &>> UInt64(truncatingIfNeeded: 64 - count * 8)
    }

    private static func mix(_ value: UInt64) -> UInt64 {
        let product = (value ^ (value >> 31)) &* 0xBF58_476D_1CE4_E5B9
        return product ^ (product >> 29)
    }

    // MARK: - The thread's cache

    /// This thread's cache, made on first use; nil when the thread-specific key could not be made.
    static var current: DictionaryShapes? {
        guard let key = threadKey else { return nil }
        if let stored = pthread_getspecific(key) {
            return Unmanaged<DictionaryShapes>.fromOpaque(stored).takeUnretainedValue()
        }
        let cache = DictionaryShapes()
        let retained = Unmanaged.passRetained(cache)
        guard pthread_setspecific(key, retained.toOpaque()) == 0 else {
            retained.release()
            return nil
        }
        return cache
    }

    /// The key under which each thread keeps its cache; its destructor releases the cache when the
    /// thread ends.
    private static let threadKey: pthread_key_t? = {
        var key = pthread_key_t()
        let created = pthread_key_create(&key) { stored in
            guard let stored else { return }
            Unmanaged<DictionaryShapes>.fromOpaque(stored).release()
        }
        return created == 0 ? key : nil
    }()
}
