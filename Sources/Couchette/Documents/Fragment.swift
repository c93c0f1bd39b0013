import Foundation

/// A path step into a document that may or may not exist: `doc["a"]["b"][0].string`.
///
/// Fragments never fail: stepping into something missing or of the wrong type yields a fragment
/// whose ``exists`` is false and whose getters return nil, 0 or false.
///
/// ```swift
/// let city = doc["contact"]["address"]["city"].string
/// let firstLike = doc["likes"][0].string
/// ```
public struct Fragment {
    /// The value at this path, as ``DictionaryProtocol/value(forKey:)`` would return it.
    public let value: Any?

    init(_ value: Any?) { self.value = value }

    /// Whether the path leads to a value (JSON null counts as existing).
    public var exists: Bool { value != nil }
    /// The value as a `String`, or nil when missing or not a string.
    public var string: String? { Coercion.string(value) }
    /// The value as an `Int`: doubles truncated, `true` as 1, 0 when missing or not a number.
    public var int: Int { Coercion.int(value) }
    /// The value as an `Int64`: doubles truncated, integers beyond `Int64` clamped, 0 when missing.
    public var int64: Int64 { Coercion.int64(value) }
    /// The value as a `Double`, 0 when missing or not a number.
    public var double: Double { Coercion.double(value) }
    /// The value as a `Float`, 0 when missing or not a number.
    public var float: Float { Float(Coercion.double(value)) }
    /// The value as a `Bool`: false when missing, null, `false` or zero; true otherwise.
    public var bool: Bool { Coercion.bool(value) }
    /// Couchbase Lite's spelling of ``bool``.
    public var boolean: Bool { bool }
    /// The value as an `NSNumber`, or nil when missing or not a number.
    public var number: NSNumber? { Coercion.number(value) }
    /// The value parsed as an ISO-8601 date, or nil when missing or not such a string.
    public var date: Date? { Coercion.date(value) }
    /// The value as a ``Blob`` (see ``DictionaryProtocol/blob(forKey:)``).
    public var blob: Blob? { Coercion.blob(value) }
    /// The value as an array, or nil when missing or not an array.
    public var array: ArrayObject? { value as? ArrayObject }
    /// The value as a dictionary, or nil when missing or not a dictionary.
    public var dictionary: DictionaryObject? { value as? DictionaryObject }

    /// The property `key` of this value; a fragment that does not exist when this value is not a
    /// dictionary.
    public subscript(key: String) -> Fragment {
        Fragment((value as? any DictionaryProtocol)?.value(forKey: key))
    }

    /// The element at `index` of this value; a fragment that does not exist when this value is not an
    /// array or the index is out of range.
    public subscript(index: Int) -> Fragment {
        Fragment((value as? any ArrayProtocol)?.value(at: index))
    }
}
