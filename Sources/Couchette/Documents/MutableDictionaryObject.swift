import Foundation

/// One slot of a mutable container: a stored value, a nested mutable container (shared by
/// reference, so edits through it show up in the document), or a value that cannot be stored.
enum MutableSlot {
    case value(Value)
    case dictionary(MutableDictionaryObject)
    case array(MutableArrayObject)
    case invalid(String)

    init(_ any: Any?) {
        switch any {
        case let dictionary as MutableDictionaryObject: self = .dictionary(dictionary)
        case let array as MutableArrayObject: self = .array(array)
        default:
            switch ValueConversion.convert(any) {
            case .value(let value): self = .value(value)
            case .unsupported(let reason): self = .invalid(reason)
            }
        }
    }

    var converted: ValueConversion.Converted {
        switch self {
        case .value(let value): .value(value)
        case .dictionary(let dictionary): dictionary.toValue()
        case .array(let array): array.toValue()
        case .invalid(let reason): .unsupported(reason)
        }
    }

    /// The getter form; nested containers become mutable objects and are kept in `slot` so that
    /// edits made through them stay in the document.
    static func get(_ slot: inout MutableSlot) -> Any? {
        switch slot {
        case .value(.dictionary):
            guard case .value(let value) = slot else { return nil }
            let object = MutableDictionaryObject(value: value)
            slot = .dictionary(object)
            return object
        case .value(.array):
            guard case .value(let value) = slot else { return nil }
            let object = MutableArrayObject(value: value)
            slot = .array(object)
            return object
        case .value(let value): return ValueConversion.plain(value)
        case .dictionary(let object): return object
        case .array(let object): return object
        case .invalid: return nil
        }
    }

    /// A copy that shares no mutable container with this slot.
    func copy() -> MutableSlot {
        switch self {
        case .dictionary(let object): .dictionary(object.copy())
        case .array(let object): .array(object.copy())
        case .value, .invalid: self
        }
    }

    static func plain(_ slot: MutableSlot) -> Any {
        switch slot {
        case .value(let value): ValueConversion.plain(value)
        case .dictionary(let object): object.toDictionary()
        case .array(let object): object.toArray()
        case .invalid: NSNull()
        }
    }
}

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
    var slots: [String: MutableSlot]

    public init() { slots = [:] }

    /// A dictionary holding a copy of `data` (values as accepted by ``setValue(_:forKey:)``).
    public convenience init(data: [String: Any]) {
        self.init()
        setData(data)
    }

    init(value: Value) {
        if case .dictionary(let entries) = value {
            slots = entries.mapValues { .value($0) }
        } else {
            slots = [:]
        }
    }

    public var count: Int { slots.count }
    public var keys: [String] { slots.keys.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) } }

    public func value(forKey key: String) -> Any? {
        guard slots[key] != nil else { return nil }
        return MutableSlot.get(&slots[key]!)
    }

    public func array(forKey key: String) -> MutableArrayObject? { value(forKey: key) as? MutableArrayObject }
    public func dictionary(forKey key: String) -> MutableDictionaryObject? { value(forKey: key) as? MutableDictionaryObject }
    public subscript(key: String) -> MutableFragment { MutableFragment(parent: .dictionary(self, key)) }

    public func toDictionary() -> [String: Any] { slots.mapValues(MutableSlot.plain) }

    /// A deep copy, keeping values that cannot be stored (the next save still reports them).
    func copy() -> MutableDictionaryObject {
        let copy = MutableDictionaryObject()
        copy.slots = slots.mapValues { $0.copy() }
        return copy
    }

    // MARK: - Setters

    /// Stores `value` under `key`. Accepts strings, numbers, booleans, dates (stored as ISO-8601
    /// strings), `nil`/`NSNull` (JSON null), arrays, dictionaries and Couchette's container objects.
    /// A value that cannot be stored is kept and reported by the next save.
    @discardableResult public func setValue(_ value: Any?, forKey key: String) -> Self {
        slots[key] = MutableSlot(value)
        return self
    }

    @discardableResult public func setString(_ value: String?, forKey key: String) -> Self { setValue(value, forKey: key) }
    @discardableResult public func setInt(_ value: Int, forKey key: String) -> Self { setValue(value, forKey: key) }
    @discardableResult public func setInt64(_ value: Int64, forKey key: String) -> Self { setValue(value, forKey: key) }
    @discardableResult public func setDouble(_ value: Double, forKey key: String) -> Self { setValue(value, forKey: key) }
    @discardableResult public func setFloat(_ value: Float, forKey key: String) -> Self { setValue(value, forKey: key) }
    @discardableResult public func setBoolean(_ value: Bool, forKey key: String) -> Self { setValue(value, forKey: key) }
    @discardableResult public func setDate(_ value: Date?, forKey key: String) -> Self { setValue(value, forKey: key) }
    @discardableResult public func setArray(_ value: ArrayObject?, forKey key: String) -> Self { setValue(value, forKey: key) }
    @discardableResult public func setArray(_ value: MutableArrayObject?, forKey key: String) -> Self { setValue(value, forKey: key) }
    @discardableResult public func setDictionary(_ value: DictionaryObject?, forKey key: String) -> Self { setValue(value, forKey: key) }
    @discardableResult public func setDictionary(_ value: MutableDictionaryObject?, forKey key: String) -> Self { setValue(value, forKey: key) }

    @discardableResult public func removeValue(forKey key: String) -> Self {
        slots[key] = nil
        return self
    }

    /// Replaces every property with the contents of `data`.
    @discardableResult public func setData(_ data: [String: Any]) -> Self {
        slots = data.mapValues { MutableSlot($0) }
        return self
    }

    /// The storable form, or the path of the first value that cannot be stored.
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
        slots[index] = MutableSlot(value)
        return self
    }

    @discardableResult public func addValue(_ value: Any?) -> Self {
        slots.append(MutableSlot(value))
        return self
    }

    /// Inserts at `index` (which may equal `count`); out of range throws `.invalidParameter`.
    @discardableResult public func insertValue(_ value: Any?, at index: Int) throws -> Self {
        guard index >= 0, index <= slots.count else {
            throw CouchetteError(.invalidParameter, "array index \(index) out of range 0...\(slots.count)")
        }
        slots.insert(MutableSlot(value), at: index)
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

    @discardableResult public func setData(_ data: [Any]) -> Self {
        slots = data.map { MutableSlot($0) }
        return self
    }

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
