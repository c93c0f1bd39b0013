import Foundation

/// A path step into a ``MutableDocument`` that can also set the value it points at.
///
/// ```swift
/// doc["contact"]["email"].string = "ann@example.com"   // the "contact" dictionary must exist
/// ```
public struct MutableFragment {
    enum Parent {
        case dictionary(MutableDictionaryObject, String)
        case array(MutableArrayObject, Int)
        case none
    }

    let parent: Parent

    /// The value at this path. Setting it stores the new value in the parent container; setting
    /// a path whose parent does not exist, or an array index out of range, does nothing.
    public var value: Any? {
        get {
            switch parent {
            case .dictionary(let dictionary, let key): dictionary.value(forKey: key)
            case .array(let array, let index): array.value(at: index)
            case .none: nil
            }
        }
        nonmutating set {
            switch parent {
            case .dictionary(let dictionary, let key): dictionary.setValue(newValue, forKey: key)
            case .array(let array, let index): _ = try? array.setValue(newValue, at: index)
            case .none: break
            }
        }
    }

    public var exists: Bool { value != nil }
    public var string: String? {
        get { Coercion.string(value) }
        nonmutating set { value = newValue }
    }
    public var int: Int {
        get { Coercion.int(value) }
        nonmutating set { value = newValue }
    }
    public var int64: Int64 {
        get { Coercion.int64(value) }
        nonmutating set { value = newValue }
    }
    public var double: Double {
        get { Coercion.double(value) }
        nonmutating set { value = newValue }
    }
    public var float: Float {
        get { Float(Coercion.double(value)) }
        nonmutating set { value = newValue }
    }
    public var bool: Bool {
        get { Coercion.bool(value) }
        nonmutating set { value = newValue }
    }
    public var boolean: Bool {
        get { bool }
        nonmutating set { bool = newValue }
    }
    public var number: NSNumber? { Coercion.number(value) }
    public var date: Date? {
        get { Coercion.date(value) }
        nonmutating set { value = newValue }
    }
    /// The value as a ``Blob``; setting one stores it (its content is saved with the document).
    public var blob: Blob? {
        get { Coercion.blob(value) }
        nonmutating set { value = newValue }
    }
    public var array: MutableArrayObject? {
        get { value as? MutableArrayObject }
        nonmutating set { value = newValue }
    }
    public var dictionary: MutableDictionaryObject? {
        get { value as? MutableDictionaryObject }
        nonmutating set { value = newValue }
    }

    public subscript(key: String) -> MutableFragment {
        guard let dictionary else { return MutableFragment(parent: .none) }
        return MutableFragment(parent: .dictionary(dictionary, key))
    }

    public subscript(index: Int) -> MutableFragment {
        guard let array else { return MutableFragment(parent: .none) }
        return MutableFragment(parent: .array(array, index))
    }
}
