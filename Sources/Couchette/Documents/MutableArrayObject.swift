import Foundation

/// An array that can be edited in place.
public final class MutableArrayObject: ArrayProtocol {
    var slots: [MutableSlot]

    public init() { slots = [] }

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

    public func array(at index: Int) -> MutableArrayObject? { value(at: index) as? MutableArrayObject }
    public func dictionary(at index: Int) -> MutableDictionaryObject? { value(at: index) as? MutableDictionaryObject }
    public subscript(index: Int) -> MutableFragment { MutableFragment(parent: .array(self, index)) }

    public func toArray() -> [Any] { slots.map(MutableSlot.plain) }

    /// A deep copy, keeping values that cannot be stored (the next save still reports them).
    func copy() -> MutableArrayObject {
        let copy = MutableArrayObject()
        copy.slots = slots.map { $0.copy() }
        return copy
    }

    // MARK: - Setters

    /// Replaces the element at `index`; an index out of range throws `.invalidParameter`.
    @discardableResult public func setValue(_ value: Any?, at index: Int) throws -> Self {
        guard slots.indices.contains(index) else {
            throw CouchetteError(.invalidParameter, "array index \(index) out of range 0..<\(slots.count)")
        }
        slots[index] = MutableSlot(value, owner: self)
        return self
    }

    @discardableResult public func addValue(_ value: Any?) -> Self {
        slots.append(MutableSlot(value, owner: self))
        return self
    }

    /// Inserts at `index` (which may equal `count`); out of range throws `.invalidParameter`.
    @discardableResult public func insertValue(_ value: Any?, at index: Int) throws -> Self {
        guard index >= 0, index <= slots.count else {
            throw CouchetteError(.invalidParameter, "array index \(index) out of range 0...\(slots.count)")
        }
        slots.insert(MutableSlot(value, owner: self), at: index)
        return self
    }

    @discardableResult public func removeValue(at index: Int) throws -> Self {
        guard slots.indices.contains(index) else {
            throw CouchetteError(.invalidParameter, "array index \(index) out of range 0..<\(slots.count)")
        }
        slots.remove(at: index)
        return self
    }

    @discardableResult public func addString(_ value: String?) -> Self { addValue(value) }
    @discardableResult public func addInt(_ value: Int) -> Self { addValue(value) }
    @discardableResult public func addInt64(_ value: Int64) -> Self { addValue(value) }
    @discardableResult public func addDouble(_ value: Double) -> Self { addValue(value) }
    @discardableResult public func addBoolean(_ value: Bool) -> Self { addValue(value) }
    @discardableResult public func addDate(_ value: Date?) -> Self { addValue(value) }
    @discardableResult public func addArray(_ value: MutableArrayObject?) -> Self { addValue(value) }
    @discardableResult public func addDictionary(_ value: MutableDictionaryObject?) -> Self { addValue(value) }
    @discardableResult public func addBlob(_ value: Blob?) -> Self { addValue(value) }
    /// Replaces the element at `index` with a blob; out of range throws `.invalidParameter`.
    @discardableResult public func setBlob(_ value: Blob?, at index: Int) throws -> Self { try setValue(value, at: index) }

    @discardableResult public func setData(_ data: [Any]) -> Self {
        slots = data.map { MutableSlot($0, owner: self) }
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
