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
    /// The entries, built from ``pristine`` the first time they are needed.
    private var storage: [String: MutableSlot]?
    /// The stored form this dictionary was read from, while nothing in it has been touched but
    /// by ``edits``: saving then copies its bytes as they are (entry by entry around the edits),
    /// and nothing is decoded.
    private var pristine: EncodedValue?
    /// Plain values set by the typed setters on a still stored dictionary (an update of a few
    /// fields): kept beside ``pristine`` instead of decoding every entry into ``storage``.
    private var edits: [String: Value] = [:]

    /// The entries. Any access through it (reads included, since they can hand out a nested
    /// container to edit) ends the pristine state.
    var slots: [String: MutableSlot] {
        get {
            materialize()
            return storage ?? [:]
        }
        _modify {
            materialize()
            pristine = nil
            yield &storage!
        }
    }

    /// Whether this dictionary is its stored form alone, without edits. (While ``pristine`` is
    /// set, the contents are exactly it plus ``edits``, and edits exist only before ``storage``
    /// is built: building it applies them and ends the pristine state.)
    private var isPristine: Bool { pristine != nil && edits.isEmpty }

    /// The entries once materialized; nil while the dictionary is still its stored form (which
    /// holds no unsaved blob), so walks for blobs need not decode it.
    var materializedSlots: [String: MutableSlot]? { storage }

    private func materialize() {
        guard storage == nil else { return }
        var built: [String: MutableSlot] = [:]
        if let pristine {
            built.reserveCapacity(pristine.count + edits.count)
            for (key, value) in pristine.entries { built[key] = .encoded(value) }
        }
        for (key, value) in edits { built[key] = .value(value) }
        if !edits.isEmpty { pristine = nil }
        edits = [:]
        storage = built
    }

    /// An empty dictionary, to fill with the setters and store with a `setDictionary(_:forKey:)`.
    public init() { storage = [:] }

    /// An empty dictionary with room for `capacity` entries (a new document's properties), so
    /// the first setters do not regrow it.
    init(capacity: Int) { storage = Dictionary(minimumCapacity: capacity) }

    /// A dictionary holding a copy of `data` (values as accepted by ``setValue(_:forKey:)``).
    public convenience init(data: [String: Any]) {
        self.init()
        setData(data)
    }

    init(value: Value) {
        if case .dictionary(let entries) = value {
            storage = entries.mapValues { .value($0) }
        } else {
            storage = [:]
        }
    }

    /// A mutable view of a stored dictionary: nothing is decoded until it is read or changed.
    init(encoded: EncodedValue) {
        pristine = encoded.isDictionary ? encoded : nil
        storage = encoded.isDictionary ? nil : [:]
    }

    /// Replaces every entry with those of a stored dictionary.
    func replaceContents(with encoded: EncodedValue) {
        pristine = encoded
        storage = nil
        edits = [:]
    }

    /// The bytes of this dictionary when it is still exactly a whole stored body (one just read
    /// from JSON, say, and not touched since): saving it then copies nothing.
    var pristineBody: [UInt8]? {
        guard isPristine, let pristine, pristine.offset == 0, pristine.encodedSize == pristine.bytes.count else { return nil }
        return pristine.bytes
    }

    /// The whole stored body with each edited value written over the one it replaces, when this
    /// dictionary is a whole stored body whose edits all replace existing values of the same
    /// encoded size (a counter incremented, a flag flipped): the offsets then stay as they are,
    /// and these are exactly the bytes a full encoding gives. Nil otherwise (including an edit
    /// that cannot be stored, which the full encoding reports).
    var patchedBody: [UInt8]? {
        guard storage == nil, !edits.isEmpty, let pristine, pristine.offset == 0, pristine.encodedSize == pristine.bytes.count
        else { return nil }
        var body = pristine.bytes
        for (key, value) in edits {
            guard let old = pristine.value(forKey: key), let size = old.encodedSize else { return nil }
            var encoder = ValueEncoder()
            guard (try? encoder.write(value)) != nil, encoder.bytes.count == size else { return nil }
            body.replaceSubrange(old.offset..<(old.offset + size), with: encoder.bytes)
        }
        return body
    }

    /// Writes this dictionary in the binary format.
    func encode(into encoder: inout ValueEncoder) throws {
        if let pristine {
            if edits.isEmpty {
                encoder.append(pristine)
            } else {
                try encodeEdited(pristine, into: &encoder)
            }
            return
        }
        // The entries sorted once, with their slots: no look-up by key while writing.
        let entries = slots.sorted { Self.precedes($0.key, $1.key) }
        try encoder.writeDictionary(count: entries.count, key: { entries[$0].key }) { encoder, index in
            try entries[index].value.encode(into: &encoder)
        }
    }

    /// Whether key `a` sorts before `b` in the stored order (by UTF-8 bytes), comparing the bytes
    /// where they lie (a property name is almost always stored in the string itself).
    private static func precedes(_ a: String, _ b: String) -> Bool {
        let order = a.utf8.withContiguousStorageIfAvailable { left in
            b.utf8.withContiguousStorageIfAvailable { right -> Bool in
                let common = min(left.count, right.count)
                if common > 0 {
                    let difference = memcmp(left.baseAddress!, right.baseAddress!, common)
                    if difference != 0 { return difference < 0 }
                }
                return left.count < right.count
            }
        }
        return (order ?? nil) ?? a.utf8.lexicographicallyPrecedes(b.utf8)
    }

    /// Writes the stored entries as they are, in their stored (sorted) order, with the edited
    /// ones merged in: no entry is decoded, no key sorted but the edited ones.
    private func encodeEdited(_ stored: EncodedValue, into encoder: inout ValueEncoder) throws {
        let entries = stored.entries
        let edited = ValueEncoder.sortedKeys(edits.keys)
        var keys: [String] = []
        var slots: [MutableSlot] = []
        keys.reserveCapacity(entries.count + edited.count)
        slots.reserveCapacity(entries.count + edited.count)
        var next = 0
        for (key, value) in entries {
            while next < edited.count, edited[next].utf8.lexicographicallyPrecedes(key.utf8) {
                keys.append(edited[next])
                slots.append(.value(edits[edited[next]]!))
                next += 1
            }
            if next < edited.count, edited[next] == key {
                keys.append(key)
                slots.append(.value(edits[key]!))
                next += 1
            } else {
                keys.append(key)
                slots.append(.encoded(value))
            }
        }
        for key in edited[next...] {
            keys.append(key)
            slots.append(.value(edits[key]!))
        }
        try encoder.writeDictionary(sortedKeys: keys) { encoder, index in try slots[index].encode(into: &encoder) }
    }

    public var count: Int { isPristine ? pristine?.count ?? 0 : slots.count }
    public var keys: [String] { isPristine ? pristine?.keys ?? [] : ValueEncoder.sortedKeys(slots.keys) }

    public func value(forKey key: String) -> Any? {
        guard slots[key] != nil else { return nil }
        return MutableSlot.get(&slots[key]!)
    }

    /// The property as an editable array: changes made through it change this dictionary. Nil when
    /// missing or not an array.
    public func array(forKey key: String) -> MutableArrayObject? { value(forKey: key) as? MutableArrayObject }
    /// The property as an editable dictionary: changes made through it change this dictionary. Nil
    /// when missing or not a dictionary.
    public func dictionary(forKey key: String) -> MutableDictionaryObject? { value(forKey: key) as? MutableDictionaryObject }
    /// A fragment that reads and sets along a path: `address["geo"]["lat"].double = 48.85`.
    public subscript(key: String) -> MutableFragment { MutableFragment(parent: .dictionary(self, key)) }

    public func toDictionary() -> [String: Any] { slots.mapValues(MutableSlot.plain) }

    /// A deep copy, keeping values that cannot be stored (the next save still reports them).
    func copy() -> MutableDictionaryObject {
        if let pristine {
            let copy = MutableDictionaryObject(encoded: pristine)
            copy.edits = edits
            return copy
        }
        let copy = MutableDictionaryObject()
        copy.slots = slots.mapValues { $0.copy() }
        return copy
    }

    // MARK: - Setters

    /// Stores `value` under `key`. Accepts strings, numbers, booleans, dates (stored as ISO-8601
    /// strings), `nil`/`NSNull` (JSON null), arrays, dictionaries and Couchette's container objects.
    /// A value that cannot be stored is kept and reported by the next save.
    @discardableResult public func setValue(_ value: Any?, forKey key: String) -> Self {
        slots[key] = MutableSlot(value, owner: self)
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
        return set(.string(ISO8601.string(from: value)), key)
    }

    private func set(_ value: Value, _ key: String) -> Self {
        if pristine != nil && storage == nil {
            edits[key] = value
        } else {
            slots[key] = .value(value)
        }
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
        slots[key] = nil
        return self
    }

    /// Replaces every property with the contents of `data`.
    @discardableResult public func setData(_ data: [String: Any]) -> Self {
        slots = data.mapValues { MutableSlot($0, owner: self) }
        return self
    }

    /// The storable form, or the path of the first value that cannot be stored.
    /// (``ValueConvertible``)
    func toValue() -> ValueConversion.Converted {
        var entries: [String: Value] = [:]
        entries.reserveCapacity(slots.count)
        for (key, slot) in slots {
            switch slot.converted {
            case .value(let value): entries[key] = value
            case .unsupported(let reason): return .unsupported("\(key): \(reason)")
            }
        }
        return .value(.dictionary(entries))
    }
}

extension MutableDictionaryObject: ValueConvertible {}
