import Foundation

/// The entries of a ``MutableDictionaryObject``, kept in the order the binary format stores them
/// (by the UTF-8 bytes of their keys): a lookup is a binary search, a setter inserts in place, and
/// encoding walks them as they lie — no hash per setter, no sort per save. A dictionary of a few
/// to a few dozen properties, which is what documents hold, is cheaper so than in a hash table.
///
/// Keys set out of order into a large dictionary would make each insertion move many entries, so
/// past ``sortedLimit`` such a dictionary stops keeping its entries sorted: they are then kept in
/// arrival order, found through a hash table, and sorted when encoded.
struct MutableEntries {
    struct Entry {
        let key: String
        /// Nil marks a removed entry, which only an overlay over a stored dictionary holds.
        var slot: MutableSlot?
        /// ``key``'s ``KeyPrefix``: most comparisons with it decide without reading the key.
        let prefix: UInt64

        init(key: String, slot: MutableSlot?) {
            self.init(key: key, slot: slot, prefix: KeyPrefix.of(key))
        }

        init(key: String, slot: MutableSlot?, prefix: UInt64) {
            self.key = key
            self.slot = slot
            self.prefix = prefix
        }
    }

    /// The first eight UTF-8 bytes of a key as a big-endian number, zero-padded: two keys whose
    /// prefixes differ are ordered as their prefixes are (a shorter key's padding sorts before
    /// any byte), so a setter's search compares numbers, reading the keys' bytes only on a tie.
    enum KeyPrefix {
        static func of(_ key: String) -> UInt64 {
            if let prefix = key.utf8.withContiguousStorageIfAvailable(of) { return prefix }
            return withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 8) { bytes in
                var count = 0
                for byte in key.utf8.prefix(8) {
                    bytes[count] = byte
                    count += 1
                }
                return of(UnsafeBufferPointer(rebasing: bytes[..<count]))
            }
        }

        static func of(_ utf8: UnsafeBufferPointer<UInt8>) -> UInt64 {
            var prefix: UInt64 = 0
            var shift: UInt64 = 56
            for byte in utf8.prefix(8) {
                prefix |= UInt64(byte) << shift
                shift &-= 8
            }
            return prefix
        }

        /// The stored order of an entry's key and `key`, whose prefix is `prefix`.
        @inline(__always)
        static func order(_ entry: UnsafePointer<Entry>, _ key: String, _ prefix: UInt64) -> Int {
            let entryPrefix = entry.pointee.prefix
            if entryPrefix != prefix { return entryPrefix < prefix ? -1 : 1 }
            return MutableEntries.compare(entry.pointee.key, key)
        }
    }

    /// The entries, in key order while ``positions`` is nil.
    private(set) var items: [Entry] = []
    /// Each key's index in ``items`` once they are no longer kept sorted.
    private var positions: [KeyBytes: Int]?

    /// A key hashed and compared by its UTF-8 bytes, as the format tells keys apart (`String`'s
    /// own equality would merge canonically equivalent keys).
    private struct KeyBytes: Hashable {
        let key: String
        init(_ key: String) { self.key = key }
        static func == (a: KeyBytes, b: KeyBytes) -> Bool { MutableEntries.compare(a.key, b.key) == 0 }
        func hash(into hasher: inout Hasher) {
            var key = key
            key.withUTF8 { hasher.combine(bytes: UnsafeRawBufferPointer($0)) }
        }
    }

    /// Entries up to which an insertion out of order moves the later ones.
    static let sortedLimit = 256

    init() {}

    init(capacity: Int) { items.reserveCapacity(capacity) }

    /// Entries already in key order (a stored dictionary's, or ones just sorted).
    init(sorted: [Entry]) { items = sorted }

    /// Entries in any order, each key once.
    init(unsorted: [Entry]) {
        items = unsorted.sorted(by: Self.precedes)
    }

    var count: Int { items.count }
    var isEmpty: Bool { items.isEmpty }

    /// The entries in key order.
    var sorted: [Entry] {
        guard positions != nil else { return items }
        return items.sorted(by: Self.precedes)
    }

    /// The index in ``items`` of `key`'s entry, or nil.
    func index(of key: String) -> Int? {
        if let positions { return positions[KeyBytes(key)] }
        let (found, index) = search(key, KeyPrefix.of(key))
        return found ? index : nil
    }

    /// The entry of `key`, if any (its slot nil when it marks a removal).
    func entry(forKey key: String) -> Entry? { index(of: key).map { items[$0] } }

    /// Gives `body` the slot at `index` to read or change in place.
    mutating func withSlot<R>(at index: Int, _ body: (inout MutableSlot?) -> R) -> R { body(&items[index].slot) }

    /// Sets the entry of `key`, adding it where it belongs when it is new.
    mutating func set(_ slot: consuming MutableSlot?, forKey key: String) {
        if let positions {
            if let index = positions[KeyBytes(key)] {
                items[index].slot = slot
            } else {
                self.positions![KeyBytes(key)] = items.count
                items.append(Entry(key: key, slot: slot))
            }
            return
        }
        let prefix = KeyPrefix.of(key)
        // Keys often arrive in order (JSON with sorted keys, models): then no search is needed.
        let afterLast = items.withUnsafeBufferPointer { items in
            guard let base = items.baseAddress, !items.isEmpty else { return true }
            return KeyPrefix.order(base + items.count - 1, key, prefix) < 0
        }
        if afterLast {
            items.append(Entry(key: key, slot: slot, prefix: prefix))
            return
        }
        let (found, index) = search(key, prefix)
        if found {
            items[index].slot = slot
        } else if items.count < Self.sortedLimit {
            insert(Entry(key: key, slot: slot, prefix: prefix), at: index)
        } else {
            var positions: [KeyBytes: Int] = [:]
            positions.reserveCapacity(items.count * 2)
            for (index, entry) in items.enumerated() { positions[KeyBytes(entry.key)] = index }
            positions[KeyBytes(key)] = items.count
            items.append(Entry(key: key, slot: slot))
            self.positions = positions
        }
    }

    /// Inserts `entry` at `index` by moving the later entries up one place in memory: the
    /// generic `Array.insert` costs several times as much for a few entries, and a document's
    /// setters rarely arrive in key order.
    private mutating func insert(_ entry: consuming Entry, at index: Int) {
        items.append(entry)
        let last = items.count - 1
        guard index < last else { return }
        items.withUnsafeMutableBufferPointer { entries in
            let base = entries.baseAddress!
            let inserted = (base + last).move()
            (base + index + 1).moveInitialize(from: base + index, count: last - index)  // overlapping: moves from the end
            (base + index).initialize(to: inserted)
        }
    }

    /// Removes the entry of `key`, if any.
    mutating func remove(forKey key: String) {
        guard let index = index(of: key) else { return }
        guard positions != nil else {
            items.remove(at: index)
            return
        }
        // Arrival order carries no meaning: the last entry fills the hole.
        let last = items.count - 1
        positions![KeyBytes(items[index].key)] = nil
        if index != last {
            items.swapAt(index, last)
            positions![KeyBytes(items[index].key)] = index
        }
        items.removeLast()
    }

    mutating func removeAll() {
        items.removeAll()
        positions = nil
    }

    /// A copy whose mutable containers are copies too.
    func deepCopy() -> MutableEntries {
        var copy = self
        for index in copy.items.indices { copy.items[index].slot = copy.items[index].slot?.copy() }
        return copy
    }

    /// Whether `key` (whose ``KeyPrefix`` is `prefix`) is present and where, or where it would
    /// be inserted.
    private func search(_ key: String, _ prefix: UInt64) -> (found: Bool, index: Int) {
        items.withUnsafeBufferPointer { items in
            var low = 0
            var high = items.count
            while low < high {
                let middle = (low + high) / 2
                let order = KeyPrefix.order(items.baseAddress! + middle, key, prefix)
                if order == 0 { return (true, middle) }
                if order < 0 { low = middle + 1 } else { high = middle }
            }
            return (false, low)
        }
    }

    /// Whether `a`'s key sorts before `b`'s.
    private static func precedes(_ a: Entry, _ b: Entry) -> Bool {
        a.prefix != b.prefix ? a.prefix < b.prefix : compare(a.key, b.key) < 0
    }

    /// The stored order of two keys (by UTF-8 bytes): negative, zero or positive, comparing the
    /// bytes where they lie (a property name is almost always stored in the string itself).
    static func compare(_ a: String, _ b: String) -> Int {
        let order = a.utf8.withContiguousStorageIfAvailable { left in
            b.utf8.withContiguousStorageIfAvailable { right -> Int in
                let common = min(left.count, right.count)
                if common > 0 {
                    let difference = memcmp(left.baseAddress!, right.baseAddress!, common)
                    if difference != 0 { return Int(difference) }
                }
                return left.count - right.count
            }
        }
        if let order = order ?? nil { return order }
        // Bytes, not `==`, which would equate canonically equivalent keys the format keeps apart.
        if a.utf8.elementsEqual(b.utf8) { return 0 }
        return a.utf8.lexicographicallyPrecedes(b.utf8) ? -1 : 1
    }
}
