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

    /// Whether the path leads to a value (JSON null counts as existing).
    public var exists: Bool { value != nil }
    /// The value as a `String`, or nil when missing or not a string; setting stores a string (nil
    /// stores JSON null).
    public var string: String? {
        get { Coercion.string(value) }
        nonmutating set { value = newValue }
    }
    /// The value as an `Int` (0 when missing or not a number); setting stores an integer.
    public var int: Int {
        get { Coercion.int(value) }
        nonmutating set { value = newValue }
    }
    /// The value as an `Int64` (0 when missing or not a number); setting stores an integer.
    public var int64: Int64 {
        get { Coercion.int64(value) }
        nonmutating set { value = newValue }
    }
    /// The value as a `Double` (0 when missing or not a number); setting stores a double.
    public var double: Double {
        get { Coercion.double(value) }
        nonmutating set { value = newValue }
    }
    /// The value as a `Float` (0 when missing or not a number); setting stores it as a double.
    public var float: Float {
        get { Float(Coercion.double(value)) }
        nonmutating set { value = newValue }
    }
    /// The value as a `Bool` (false when missing, null, `false` or zero); setting stores a boolean.
    public var bool: Bool {
        get { Coercion.bool(value) }
        nonmutating set { value = newValue }
    }
    /// Couchbase Lite's spelling of ``bool``.
    public var boolean: Bool {
        get { bool }
        nonmutating set { bool = newValue }
    }
    /// The value as an `NSNumber`, or nil when missing or not a number (read-only: set ``int``,
    /// ``double`` or ``value`` instead).
    public var number: NSNumber? { Coercion.number(value) }
    /// The value parsed as an ISO-8601 date; setting stores the date as an ISO-8601 string.
    public var date: Date? {
        get { Coercion.date(value) }
        nonmutating set { value = newValue }
    }
    /// The value as a ``Blob``; setting one stores it (its content is saved with the document).
    public var blob: Blob? {
        get { Coercion.blob(value) }
        nonmutating set { value = newValue }
    }
    /// The value as an editable array, or nil when missing or not an array; setting stores an array.
    public var array: MutableArrayObject? {
        get { value as? MutableArrayObject }
        nonmutating set { value = newValue }
    }
    /// The value as an editable dictionary, or nil when missing or not a dictionary; setting stores a
    /// dictionary.
    public var dictionary: MutableDictionaryObject? {
        get { value as? MutableDictionaryObject }
        nonmutating set { value = newValue }
    }

    /// The property `key` of this value; reading or setting through it does nothing when this value is
    /// not a dictionary.
    public subscript(key: String) -> MutableFragment {
        guard let dictionary else { return MutableFragment(parent: .none) }
        return MutableFragment(parent: .dictionary(dictionary, key))
    }

    /// The element at `index` of this value; reading or setting through it does nothing when this
    /// value is not an array or the index is out of range.
    public subscript(index: Int) -> MutableFragment {
        guard let array else { return MutableFragment(parent: .none) }
        return MutableFragment(parent: .array(array, index))
    }
}
