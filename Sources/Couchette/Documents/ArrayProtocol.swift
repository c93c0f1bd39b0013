import Foundation

/// Read access shared by ``ArrayObject`` and ``MutableArrayObject``.
public protocol ArrayProtocol {
    var count: Int { get }
    /// The element at `index`, or nil when out of range.
    func value(at index: Int) -> Any?
    func toArray() -> [Any]
}

extension ArrayProtocol {
    public func string(at index: Int) -> String? { Coercion.string(value(at: index)) }
    public func int(at index: Int) -> Int { Coercion.int(value(at: index)) }
    public func int64(at index: Int) -> Int64 { Coercion.int64(value(at: index)) }
    public func double(at index: Int) -> Double { Coercion.double(value(at: index)) }
    public func float(at index: Int) -> Float { Float(Coercion.double(value(at: index))) }
    public func bool(at index: Int) -> Bool { Coercion.bool(value(at: index)) }
    public func boolean(at index: Int) -> Bool { bool(at: index) }
    public func number(at index: Int) -> NSNumber? { Coercion.number(value(at: index)) }
    public func date(at index: Int) -> Date? { Coercion.date(value(at: index)) }
    /// The element as a ``Blob`` (see ``DictionaryProtocol/blob(forKey:)``).
    public func blob(at index: Int) -> Blob? { Coercion.blob(value(at: index)) }
    public func toJSON() -> String {
        JSON.string(from: (try? ValueConversion.strict(toArray())) ?? .array([]))
    }
}
