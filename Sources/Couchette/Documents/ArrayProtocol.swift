import Foundation

/// Read access shared by ``ArrayObject`` and ``MutableArrayObject``.
///
/// ```swift
/// func joined(_ array: some ArrayProtocol) -> String {   // an ArrayObject or a MutableArrayObject
///     (0..<array.count).compactMap { array.string(at: $0) }.joined(separator: ", ")
/// }
/// ```
public protocol ArrayProtocol {
    /// Number of elements.
    var count: Int { get }
    /// The element at `index`, or nil when out of range.
    func value(at index: Int) -> Any?
    /// A plain-Swift copy: nested containers as `[String: Any]` and `[Any]`, JSON null as `NSNull`.
    func toArray() -> [Any]
}

extension ArrayProtocol {
    /// The element as a `String`, or nil when it is out of range or not a string.
    public func string(at index: Int) -> String? { Coercion.string(value(at: index)) }
    /// The element as an `Int`: doubles truncated toward zero, `true` as 1, 0 out of range and for
    /// non-numbers.
    public func int(at index: Int) -> Int { Coercion.int(value(at: index)) }
    /// The element as an `Int64`: doubles truncated, integers beyond `Int64` clamped, 0 for
    /// non-numbers.
    public func int64(at index: Int) -> Int64 { Coercion.int64(value(at: index)) }
    /// The element as a `Double`: integers as the nearest `Double`, 0 for non-numbers.
    public func double(at index: Int) -> Double { Coercion.double(value(at: index)) }
    /// The element as a `Float`, converted from ``double(at:)``.
    public func float(at index: Int) -> Float { Float(Coercion.double(value(at: index))) }
    /// The element as a `Bool`: false out of range and for JSON null, `false` and zero; true for
    /// anything else.
    public func bool(at index: Int) -> Bool { Coercion.bool(value(at: index)) }
    /// Couchbase Lite's spelling of ``bool(at:)``.
    public func boolean(at index: Int) -> Bool { bool(at: index) }
    /// The element as an `NSNumber`, or nil when it is out of range or not a number.
    public func number(at index: Int) -> NSNumber? { Coercion.number(value(at: index)) }
    /// Parses an ISO-8601 string element; nil for anything else.
    public func date(at index: Int) -> Date? { Coercion.date(value(at: index)) }
    /// The element as a ``Blob`` (see ``DictionaryProtocol/blob(forKey:)``).
    public func blob(at index: Int) -> Blob? { Coercion.blob(value(at: index)) }
    /// The array as compact JSON text.
    public func toJSON() -> String {
        JSON.string(from: (try? ValueConversion.strict(toArray())) ?? .array([]))
    }
}
