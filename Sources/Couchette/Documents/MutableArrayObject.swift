import Foundation

/// An array that can be edited in place.
///
/// ```swift
/// let tags = MutableArrayObject().addString("home").addString("urgent")
/// doc.setArray(tags, forKey: "tags")
/// try doc.array(forKey: "tags")?.insertValue("first", at: 0)   // edits the document's array
/// ```
public final class MutableArrayObject: ArrayProtocol {
    /// Unchecked exclusivity (here and on ``stored``), for the reasons given on
    /// ``MutableDictionaryObject``: one task's object, whose accesses never overlap.
    @exclusivity(unchecked) private(set) var slots: [MutableSlot]
    /// The stored array these slots were read from, while no element has been added, inserted or
    /// removed: slot `i` then replaces stored element `i`, so changes of the same encoded size
    /// can be written over the stored bytes (see ``patch(_:)``).
    @exclusivity(unchecked) private var stored: EncodedValue?

    /// An empty array, to fill with the `add` methods.
    public init() { slots = [] }

    /// An array holding a copy of `data` (values as accepted by ``addValue(_:)``).
    public convenience init(data: [Any]) {
        self.init()
        setData(data)
    }

    init(value: Value) {
        if case .array(let elements) = value {
            slots = elements.map { .value($0) }
        } else {
            slots = []
        }
    }

    /// A mutable view of a stored array: its elements stay in binary form until touched.
    init(encoded: EncodedValue) {
        slots = (0..<encoded.count).map { index in encoded.element(at: index).map(MutableSlot.encoded) ?? .value(.null) }
        stored = encoded.isArray ? encoded : nil
    }

    /// Whether this is the stored array `value`, read from the same bytes, with its elements where
    /// they were (so its changes can be written over them).
    func isView(of value: EncodedValue) -> Bool { stored.map { $0.isSameValue(as: value) } ?? false }

    /// Writes the changed elements over the stored bytes in `body` (a copy of the buffer the
    /// stored array lies in), when each keeps its element's encoded size; false when one does not.
    func patch(_ body: inout [UInt8]) -> Bool {
        guard let stored else { return false }
        var index = 0
        var patched = true
        stored.forEachElement { old in
            guard patched else { return }
            defer { index += 1 }
            guard let old, index < slots.count else {
                patched = false
                return
            }
            patched = slots[index].patch(over: old, in: &body)
        }
        return patched && index == slots.count
    }

    /// Writes this array in the binary format.
    func encode(into encoder: inout ValueEncoder) throws {
        try encoder.writeArray(count: slots.count) { encoder, index in try slots[index].encode(into: &encoder) }
    }

    public var count: Int { slots.count }

    public func value(at index: Int) -> Any? {
        guard slots.indices.contains(index) else { return nil }
        return MutableSlot.get(&slots[index])
    }

    /// The element as an editable array, or nil when out of range or not an array.
    public func array(at index: Int) -> MutableArrayObject? { value(at: index) as? MutableArrayObject }
    /// The element as an editable dictionary, or nil when out of range or not a dictionary.
    public func dictionary(at index: Int) -> MutableDictionaryObject? { value(at: index) as? MutableDictionaryObject }
    /// A fragment that reads and sets along a path: `tags[0].string = "urgent"`.
    public subscript(index: Int) -> MutableFragment { MutableFragment(parent: .array(self, index)) }

    public func toArray() -> [Any] { slots.map(MutableSlot.plain) }

    /// A deep copy, keeping values that cannot be stored (the next save still reports them).
    func copy() -> MutableArrayObject {
        let copy = MutableArrayObject()
        copy.slots = slots.map { $0.copy() }
        copy.stored = stored
        return copy
    }

    // MARK: - Setters

    /// Replaces the element at `index`; an index out of range throws `.invalidParameter`.
    @discardableResult public func setValue(_ value: Any?, at index: Int) throws -> Self {
        guard slots.indices.contains(index) else {
            throw CouchetteError(.invalidParameter, "array index \(index) out of range 0..<\(slots.count)")
        }
        slots[index] = MutableSlot(value, owner: self)  // in place: the stored layout still holds
        return self
    }

    /// Appends a value: strings, numbers, booleans, dates (as ISO-8601 strings), `nil`/`NSNull`
    /// (JSON null), arrays, dictionaries and Couchette's container objects. A value that cannot be
    /// stored is kept and reported by the next save.
    @discardableResult public func addValue(_ value: Any?) -> Self {
        slots.append(MutableSlot(value, owner: self))
        stored = nil
        return self
    }

    /// Inserts at `index` (which may equal `count`); out of range throws `.invalidParameter`.
    @discardableResult public func insertValue(_ value: Any?, at index: Int) throws -> Self {
        guard index >= 0, index <= slots.count else {
            throw CouchetteError(.invalidParameter, "array index \(index) out of range 0...\(slots.count)")
        }
        slots.insert(MutableSlot(value, owner: self), at: index)
        stored = nil
        return self
    }

    /// Removes the element at `index`, shifting the later ones down; out of range throws
    /// `.invalidParameter`.
    @discardableResult public func removeValue(at index: Int) throws -> Self {
        guard slots.indices.contains(index) else {
            throw CouchetteError(.invalidParameter, "array index \(index) out of range 0..<\(slots.count)")
        }
        slots.remove(at: index)
        stored = nil
        return self
    }

    /// Appends a string; nil appends JSON null.
    @discardableResult public func addString(_ value: String?) -> Self { addValue(value) }
    /// Appends an integer.
    @discardableResult public func addInt(_ value: Int) -> Self { addValue(value) }
    /// Appends a 64-bit integer.
    @discardableResult public func addInt64(_ value: Int64) -> Self { addValue(value) }
    /// Appends a double (kept as a double).
    @discardableResult public func addDouble(_ value: Double) -> Self { addValue(value) }
    /// Appends `true` or `false`.
    @discardableResult public func addBoolean(_ value: Bool) -> Self { addValue(value) }
    /// Appends a date as an ISO-8601 string; nil appends JSON null.
    @discardableResult public func addDate(_ value: Date?) -> Self { addValue(value) }
    /// Appends an editable array; nil appends JSON null.
    @discardableResult public func addArray(_ value: MutableArrayObject?) -> Self { addValue(value) }
    /// Appends an editable dictionary; nil appends JSON null.
    @discardableResult public func addDictionary(_ value: MutableDictionaryObject?) -> Self { addValue(value) }
    /// Appends a blob; saving the document stores its content first. Nil appends JSON null.
    @discardableResult public func addBlob(_ value: Blob?) -> Self { addValue(value) }
    /// Replaces the element at `index` with a blob; out of range throws `.invalidParameter`.
    @discardableResult public func setBlob(_ value: Blob?, at index: Int) throws -> Self { try setValue(value, at: index) }

    /// Replaces every element with the contents of `data`.
    @discardableResult public func setData(_ data: [Any]) -> Self {
        slots = data.map { MutableSlot($0, owner: self) }
        stored = nil
        return self
    }

    /// (``ValueConvertible``)
    func toValue() -> ValueConversion.Converted {
        var elements: [Value] = []
        elements.reserveCapacity(slots.count)
        for (index, slot) in slots.enumerated() {
            switch slot.converted {
            case .value(let value): elements.append(value)
            case .unsupported(let reason): return .unsupported("[\(index)]: \(reason)")
            }
        }
        return .value(.array(elements))
    }
}

extension MutableArrayObject: ValueConvertible {}
