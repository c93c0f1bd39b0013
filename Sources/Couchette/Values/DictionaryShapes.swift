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
/// The cache is per thread (a `pthread` key), so it needs no lock and is never shared: a
/// conversion is synchronous and runs on one thread from start to end. Its size is bounded
/// (``slotCount`` shapes of at most ``maximumKeys`` keys and ``maximumKeyBytes`` bytes of keys);
/// the thread's exit releases it.
final class DictionaryShapes {
    /// One key set: its keys' bytes in encoded order, and the dictionary from key to entry number.
    final class Shape {
        let fingerprint: UInt64
        /// The keys' UTF-8 bytes, one after the other (and 8 zero bytes).
        let keyBytes: [UInt8]
        /// Where each key ends in `keyBytes`.
        let keyEnds: [Int]
        /// Key → number of the entry (in encoded order) that holds its value; for a key stored twice
        /// (damaged or hand-made bytes) the later entry, as a conversion that hashes every key keeps.
        let positions: [String: Int]

        init(fingerprint: UInt64, keys: [UnsafeRawBufferPointer]) {
            self.fingerprint = fingerprint
            var bytes: [UInt8] = []
            var ends: [Int] = []
            var positions = [String: Int](minimumCapacity: keys.count)
            ends.reserveCapacity(keys.count)
            for (number, key) in keys.enumerated() {
                bytes.append(contentsOf: key)
                ends.append(bytes.count)
                positions[BorrowedValue.string(key)] = number
            }
            bytes.append(contentsOf: [UInt8](repeating: 0, count: 8))  // every key then compares by whole-word loads
            keyBytes = bytes
            keyEnds = ends
            self.positions = positions
        }

        /// Whether the keys in `entries` of `buffer` are exactly this shape's, in the same order.
        func matches(_ entries: UnsafeMutableBufferPointer<DictionaryShapes.Entry>, in buffer: UnsafeRawBufferPointer) -> Bool {
            guard entries.count == keyEnds.count else { return false }
            return keyBytes.withUnsafeBytes { stored in
                var start = 0
                for (index, entry) in entries.enumerated() {
                    let end = keyEnds[index]
                    guard end - start == Int(entry.keyCount) else { return false }
                    var mine = start
                    var theirs = Int(entry.keyStart)
                    while mine < end {
                        let length = min(8, end - mine)
                        let kept = DictionaryShapes.word(stored, at: mine, count: length)
                        guard kept == DictionaryShapes.word(buffer, at: theirs, count: length) else { return false }
                        mine += length
                        theirs += length
                    }
                    start = end
                }
                return true
            }
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

    private init() {
        slots = .allocate(capacity: Self.slotCount)
        slots.initialize(repeating: Slot(), count: Self.slotCount)
    }

    deinit {
        slots.deinitialize(count: Self.slotCount)
        slots.deallocate()
    }

    /// The shape kept for `fingerprint` when its keys are exactly those of `entries`.
    func shape(_ fingerprint: UInt64, matching entries: UnsafeMutableBufferPointer<Entry>, in buffer: UnsafeRawBufferPointer) -> Shape? {
        guard let shape = slots[Self.slot(fingerprint)].shape, shape.fingerprint == fingerprint,
            shape.matches(entries, in: buffer)
        else { return nil }
        return shape
    }

    /// Records a conversion that found no shape: the second time in a row that a slot sees the same
    /// fingerprint, the key set is kept.
    func noteMiss(_ fingerprint: UInt64, entries: UnsafeMutableBufferPointer<Entry>, in buffer: UnsafeRawBufferPointer) {
        let slot = slots + Self.slot(fingerprint)
        guard slot.pointee.pending == fingerprint else {
            slot.pointee.pending = fingerprint
            return
        }
        slot.pointee.pending = 0
        var total = 0
        for entry in entries { total += Int(entry.keyCount) }
        guard total <= Self.maximumKeyBytes else { return }
        let keys = entries.map { UnsafeRawBufferPointer(rebasing: buffer[Int($0.keyStart)..<(Int($0.keyStart) + Int($0.keyCount))]) }
        slot.pointee.shape = Shape(fingerprint: fingerprint, keys: keys)
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
            return count == 8 ? loaded : loaded & ((1 << UInt64(count * 8)) - 1)
        }
        var word: UInt64 = 0
        for index in (0..<count).reversed() { word = word << 8 | UInt64(buffer[position + index]) }
        return word
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
