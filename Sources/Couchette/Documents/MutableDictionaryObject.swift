import Foundation

/// A dictionary that can be edited in place, inside a ``MutableDocument`` or on its own.
///
/// Setters return `self`, so they chain:
///
/// ```swift
/// let address = MutableDictionaryObject()
///     .setString("1 Main St", forKey: "street")
///     .setString("Springfield", forKey: "city")
/// doc.setDictionary(address, forKey: "address")
/// ```
public final class MutableDictionaryObject: DictionaryProtocol {
    /// The stored form this dictionary was read from; nil for one built in memory. While it is
    /// set, ``entries`` holds only what changed since (a nil slot: a removed key), so nothing is
    /// decoded until read, and saving copies every untouched entry's bytes as they are.
    ///
    /// Unchecked exclusivity (here and on ``entries``): the object is not `Sendable`, so one task
    /// uses it, and no access overlaps another of the same object — nothing called while
    /// ``entries`` is being changed reads this dictionary (a value's cycle check stops at this
    /// object's identity, and containers cannot contain themselves). The runtime checks cost a
    /// document save more than its setters' work.
    @exclusivity(unchecked) private var stored: EncodedValue?
    /// With ``stored``: the changed entries. Without: every entry. In key order either way.
    @exclusivity(unchecked) private var entries: MutableEntries
    /// The entry of ``stored`` a property was last found at by name (-1: none): where a save
    /// that writes a changed value over the stored one looks for it first (see
    /// ``BorrowedValue/entry(forKey:near:)``). Read and set by this object's own lookups, and
    /// taken from the document a copy was made of (``hintSource``) until this object finds one.
    private var foundEntry = -1
    /// The document this dictionary is the mutable copy of (``Document/toMutable()``), whose
    /// reads leave their entry as the hint: `doc.toMutable().setInt(doc.int(forKey: k) + 1,
    /// forKey: k)` makes the copy before it reads, so the hint is taken when first needed.
    private var hintSource: Document?

    /// The entries this dictionary holds in memory (a nil slot: a removed key). Every nested
    /// mutable container, blob or unstorable value is among them, since the stored form holds
    /// none: walks for blobs and cycles need not decode anything.
    var changedEntries: [MutableEntries.Entry] { entries.items }

    /// An empty dictionary, to fill with the setters and store with a `setDictionary(_:forKey:)`.
    public init() { entries = MutableEntries() }

    /// An empty dictionary with room for `capacity` entries (a new document's properties), so
    /// the first setters do not regrow it.
    init(capacity: Int) { entries = MutableEntries(capacity: capacity) }

    /// A dictionary holding a copy of `data` (values as accepted by ``setValue(_:forKey:)``).
    public convenience init(data: [String: Any]) {
        self.init()
        setData(data)
    }

    init(value: Value) {
        if case .dictionary(let values) = value {
            entries = MutableEntries(unsorted: values.map { MutableEntries.Entry(key: $0.key, slot: .value($0.value)) })
        } else {
            entries = MutableEntries()
        }
    }

    /// A mutable view of a stored dictionary: nothing is decoded until it is read or changed.
    /// `hintSource`: the document `encoded` belongs to, whose property reads give the first
    /// lookup hint (see ``hintSource``).
    init(encoded: EncodedValue, hintSource: Document? = nil) {
        stored = encoded.isDictionary ? encoded : nil
        entries = MutableEntries()
        self.hintSource = hintSource
    }

    /// Replaces every entry with those of a stored dictionary.
    func replaceContents(with encoded: EncodedValue) {
        stored = encoded
        foundEntry = -1
        hintSource = nil
        entries.removeAll()
    }

    /// The stored property `key`, found through ``foundEntry`` and remembered there.
    private func storedValue(forKey key: String) -> EncodedValue? {
        if foundEntry < 0, let hintSource { foundEntry = hintSource.lastFoundEntryHint }
        guard let stored, let (entry, value) = stored.entry(forKey: key, near: foundEntry) else { return nil }
        foundEntry = entry
        return value
    }

    /// Whether this is the stored dictionary `value`, read from the same bytes (so its changes,
    /// if any, can be written over them).
    func isView(of value: EncodedValue) -> Bool { stored.map { $0.isSameValue(as: value) } ?? false }

    /// The bytes of this dictionary when it is still exactly a whole stored body (one just read
    /// from JSON, say, and not touched since): saving it then copies nothing.
    var pristineBody: [UInt8]? {
        guard entries.isEmpty, let stored, stored.isWholeBuffer else { return nil }
        return stored.bytes
    }

    /// The whole stored body with each changed value written over the one it replaces, when this
    /// dictionary is a whole stored body whose changes, at any depth, all replace existing values
    /// by values of the same encoded size (a counter incremented, a flag flipped, a nested field
    /// edited): the offsets then stay as they are, and these are exactly the bytes a full
    /// encoding gives. Nil otherwise (including a change that cannot be stored, which the full
    /// encoding reports).
    var patchedBody: [UInt8]? {
        guard !entries.isEmpty, let stored, stored.isWholeBuffer else { return nil }
        var body = stored.bytes
        return patch(&body) ? body : nil
    }

    /// Writes this dictionary's changes over its stored bytes in `body` (a copy of the buffer
    /// ``stored`` lies in), when each keeps its value's encoded size; false when one does not.
    func patch(_ body: inout [UInt8]) -> Bool {
        guard stored != nil else { return false }
        for entry in entries.items {
            guard let slot = entry.slot, let old = storedValue(forKey: entry.key), slot.patch(over: old, in: &body) else {
                return false
            }
        }
        return true
    }

    /// Takes `body`, the full encoding of this dictionary just made, as its stored form when
    /// every entry held in memory is a plain value (or a removal): the entries are freed, and
    /// the dictionary reads the same values from the body from now on. A document its caller
    /// keeps after the save (a list of saved documents, say) then holds one buffer instead of
    /// its entries and their arrays, and saving it again unchanged copies nothing. A dictionary
    /// holding a mutable container, a blob or an unstorable value keeps its entries (see
    /// ``MutableSlot/held``), since those objects must stay the ones the caller may still hold
    /// and edit.
    func adopt(encoding body: [UInt8]) {
        // The slots are read where they lie: a `for` over the entries would copy each one.
        let plain = entries.items.withUnsafeBufferPointer { entries in
            entries.indices.allSatisfy { entries[$0].slot?.held == nil }
        }
        guard plain else { return }
        stored = EncodedValue(bytes: body)
        hintSource = nil  // its own reads set the hint from now on
        entries.removeAll()
    }

    /// Writes this dictionary in the binary format.
    func encode(into encoder: inout ValueEncoder) throws {
        guard let stored else {
            // Through a buffer pointer each slot is encoded where it lies, not copied out first.
            try self.entries.sorted.withUnsafeBufferPointer { entries in
                try encoder.writeDictionary(count: entries.count, key: { entries[$0].key }) { encoder, index in
                    try entries[index].slot?.encode(into: &encoder)
                }
            }
            return
        }
        if entries.isEmpty {
            encoder.append(stored)
            return
        }
        // The stored entries as they are, in their stored (sorted) order, with the changed ones
        // merged in: no entry is decoded, no key sorted.
        var keys: [String] = []
        var slots: [MutableSlot] = []
        keys.reserveCapacity(stored.count + entries.count)
        slots.reserveCapacity(stored.count + entries.count)
        forEachEntry(stored) { key, slot in
            keys.append(key)
            slots.append(slot)
        }
        try encoder.writeDictionary(sortedKeys: keys) { encoder, index in try slots[index].encode(into: &encoder) }
    }

    /// Visits every entry in key order: the stored ones (as `.encoded` slots) merged with the
    /// changed ones, removed keys left out.
    private func forEachEntry(_ stored: EncodedValue, _ body: (String, MutableSlot) -> Void) {
        let changes = entries.sorted
        var next = 0
        stored.forEachEntry { key, value in
            while next < changes.count {
                let order = MutableEntries.compare(changes[next].key, key)
                if order > 0 { break }
                if let slot = changes[next].slot { body(changes[next].key, slot) }
                next += 1
                if order == 0 { return }
            }
            body(key, .encoded(value))
        }
        for change in changes[next...] {
            if let slot = change.slot { body(change.key, slot) }
        }
    }

    /// Visits every entry in key order.
    private func forEachEntry(_ body: (String, MutableSlot) -> Void) {
        if let stored {
            forEachEntry(stored, body)
        } else {
            for entry in entries.sorted {
                if let slot = entry.slot { body(entry.key, slot) }
            }
        }
    }

    public var count: Int {
        guard let stored else { return entries.count }
        var count = stored.count
        for entry in entries.items {
            let wasStored = stored.value(forKey: entry.key) != nil
            if entry.slot == nil {
                if wasStored { count -= 1 }
            } else if !wasStored {
                count += 1
            }
        }
        return count
    }

    public var keys: [String] {
        if let stored, entries.isEmpty { return stored.keys }
        var keys: [String] = []
        forEachEntry { key, _ in keys.append(key) }
        return keys
    }

    public func value(forKey key: String) -> Any? {
        if let index = entries.index(of: key) {
            return entries.withSlot(at: index) { slot in
                guard slot != nil else { return nil }
                return MutableSlot.get(&slot!)
            }
        }
        guard let value = storedValue(forKey: key) else { return nil }
        guard value.isDictionary || value.isArray else { return ValueConversion.plain(value) }
        // A nested container is handed out to be edited: it joins the changed entries (changing
        // nothing yet), so edits made through it are saved.
        var slot = MutableSlot.encoded(value)
        let object = MutableSlot.get(&slot)
        entries.set(slot, forKey: key)
        return object
    }

    /// The property as an editable array: changes made through it change this dictionary. Nil when
    /// missing or not an array.
    public func array(forKey key: String) -> MutableArrayObject? { value(forKey: key) as? MutableArrayObject }
    /// The property as an editable dictionary: changes made through it change this dictionary. Nil
    /// when missing or not a dictionary.
    public func dictionary(forKey key: String) -> MutableDictionaryObject? { value(forKey: key) as? MutableDictionaryObject }
    /// A fragment that reads and sets along a path: `address["geo"]["lat"].double = 48.85`.
    public subscript(key: String) -> MutableFragment { MutableFragment(parent: .dictionary(self, key)) }

    public func toDictionary() -> [String: Any] {
        if let stored, entries.isEmpty { return ValueConversion.plainDictionary(stored) }
        var dictionary: [String: Any] = [:]
        dictionary.reserveCapacity(entries.count)
        forEachEntry { key, slot in dictionary[key] = MutableSlot.plain(slot) }
        return dictionary
    }

    /// A deep copy, keeping values that cannot be stored (the next save still reports them).
    func copy() -> MutableDictionaryObject {
        let copy = MutableDictionaryObject()
        copy.stored = stored
        copy.foundEntry = foundEntry
        copy.hintSource = hintSource
        copy.entries = entries.deepCopy()
        return copy
    }

    // MARK: - Setters

    /// Stores `value` under `key`. Accepts strings, numbers, booleans, dates (stored as ISO-8601
    /// strings), `nil`/`NSNull` (JSON null), arrays, dictionaries and Couchette's container objects.
    /// A value that cannot be stored is kept and reported by the next save.
    @discardableResult public func setValue(_ value: Any?, forKey key: String) -> Self {
        entries.set(MutableSlot(value, owner: self), forKey: key)
        return self
    }

    // Typed setters store their value directly: no `Any` boxing and no dynamic casts.
    /// Stores a string; nil stores JSON null.
    @discardableResult public func setString(_ value: String?, forKey key: String) -> Self { set(value.map(Value.string) ?? .null, key) }
    /// Stores an integer (kept as an integer: `1` never becomes `1.0`).
    @discardableResult public func setInt(_ value: Int, forKey key: String) -> Self { set(.int(Int64(value)), key) }
    /// Stores a 64-bit integer.
    @discardableResult public func setInt64(_ value: Int64, forKey key: String) -> Self { set(.int(value), key) }
    /// Stores a double (kept as a double: `1.0` is written back as `1.0`). NaN and infinities are
    /// reported by the next save, since JSON cannot hold them.
    @discardableResult public func setDouble(_ value: Double, forKey key: String) -> Self { set(.double(value), key) }
    /// Stores a float, widened to a double.
    @discardableResult public func setFloat(_ value: Float, forKey key: String) -> Self { set(.double(Double(value)), key) }
    /// Stores `true` or `false`.
    @discardableResult public func setBoolean(_ value: Bool, forKey key: String) -> Self { set(.bool(value), key) }
    /// Stores a date as an ISO-8601 string (what ``DictionaryProtocol/date(forKey:)`` reads back); nil
    /// stores JSON null, and a date outside what ISO-8601 can write is reported by the next save.
    @discardableResult public func setDate(_ value: Date?, forKey key: String) -> Self {
        guard let value, ISO8601.canFormat(value) else { return setValue(value, forKey: key) }  // nil, or reported at save
        entries.set(.date(value), forKey: key)  // formatted when encoded
        return self
    }

    private func set(_ value: Value, _ key: String) -> Self {
        entries.set(.value(value), forKey: key)
        return self
    }
    /// Stores an array read from a document (its elements are copied); nil stores JSON null.
    @discardableResult public func setArray(_ value: ArrayObject?, forKey key: String) -> Self { setValue(value, forKey: key) }
    /// Stores an editable array; nil stores JSON null.
    @discardableResult public func setArray(_ value: MutableArrayObject?, forKey key: String) -> Self { setValue(value, forKey: key) }
    /// Stores a dictionary read from a document (its entries are copied); nil stores JSON null.
    @discardableResult public func setDictionary(_ value: DictionaryObject?, forKey key: String) -> Self { setValue(value, forKey: key) }
    /// Stores an editable dictionary; nil stores JSON null.
    @discardableResult public func setDictionary(_ value: MutableDictionaryObject?, forKey key: String) -> Self {
        setValue(value, forKey: key)
    }

    /// Sets a blob; saving the document stores its content.
    @discardableResult public func setBlob(_ value: Blob?, forKey key: String) -> Self { setValue(value, forKey: key) }
    /// Removes the property, so it is missing rather than null; removing a missing key does nothing.
    @discardableResult public func removeValue(forKey key: String) -> Self {
        if let stored, stored.value(forKey: key) != nil {
            entries.set(nil, forKey: key)  // hides the stored entry
        } else {
            entries.remove(forKey: key)
        }
        return self
    }

    /// Replaces every property with the contents of `data`.
    @discardableResult public func setData(_ data: [String: Any]) -> Self {
        let replacement = MutableEntries(unsorted: data.map { MutableEntries.Entry(key: $0.key, slot: MutableSlot($0.value, owner: self)) })
        stored = nil
        entries = replacement
        return self
    }

    /// The storable form, or the path of the first value that cannot be stored.
    /// (``ValueConvertible``)
    func toValue() -> ValueConversion.Converted {
        if let stored, entries.isEmpty { return .value(stored.decode()) }
        var values: [String: Value] = [:]
        values.reserveCapacity(entries.count)
        var unsupported: String?
        forEachEntry { key, slot in
            guard unsupported == nil else { return }
            switch slot.converted {
            case .value(let value): values[key] = value
            case .unsupported(let reason): unsupported = "\(key): \(reason)"
            }
        }
        if let unsupported { return .unsupported(unsupported) }
        return .value(.dictionary(values))
    }
}

extension MutableDictionaryObject: ValueConvertible {}
