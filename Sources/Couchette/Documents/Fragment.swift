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

    public var exists: Bool { value != nil }
    public var string: String? { Coercion.string(value) }
    public var int: Int { Coercion.int(value) }
    public var int64: Int64 { Coercion.int64(value) }
    public var double: Double { Coercion.double(value) }
    public var float: Float { Float(Coercion.double(value)) }
    public var bool: Bool { Coercion.bool(value) }
    public var boolean: Bool { bool }
    public var number: NSNumber? { Coercion.number(value) }
    public var date: Date? { Coercion.date(value) }
    /// The value as a ``Blob`` (see ``DictionaryProtocol/blob(forKey:)``).
    public var blob: Blob? { Coercion.blob(value) }
    public var array: ArrayObject? { value as? ArrayObject }
    public var dictionary: DictionaryObject? { value as? DictionaryObject }

    public subscript(key: String) -> Fragment {
        Fragment((value as? any DictionaryProtocol)?.value(forKey: key))
    }

    public subscript(index: Int) -> Fragment {
        Fragment((value as? any ArrayProtocol)?.value(at: index))
    }
}
