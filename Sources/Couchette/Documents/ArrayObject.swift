/// An immutable array inside a ``Document``; reads straight from the stored bytes.
///
/// ```swift
/// if let likes = doc.array(forKey: "likes") {
///     for index in 0..<likes.count { print(likes.string(at: index) ?? "-") }
/// }
/// ```
public struct ArrayObject: ArrayProtocol, Sendable, Equatable {
    let encoded: EncodedValue

    init(encoded: EncodedValue) { self.encoded = encoded }

    public var count: Int { encoded.count }

    public func value(at index: Int) -> Any? {
        encoded.element(at: index).map(ImmutableValues.wrap)
    }

    /// The element as a nested array, or nil when it is out of range or not an array.
    public func array(at index: Int) -> ArrayObject? { value(at: index) as? ArrayObject }
    /// The element as a dictionary, or nil when it is out of range or not a dictionary.
    public func dictionary(at index: Int) -> DictionaryObject? { value(at: index) as? DictionaryObject }
    /// A fragment for path-style reads that never fail: `likes[0].string`.
    public subscript(index: Int) -> Fragment { Fragment(value(at: index)) }

    public func toArray() -> [Any] { ValueConversion.plainArray(encoded) }
    /// The array as compact JSON text, numbers written as CouchDB writes them.
    public func toJSON() -> String { JSON.string(from: encoded.decode()) }
    /// A mutable copy, for building a changed array to set on a ``MutableDocument``.
    public func toMutable() -> MutableArrayObject { MutableArrayObject(encoded: encoded) }

    /// Two arrays are equal when their stored bytes are: same elements in the same order, same number
    /// kinds.
    public static func == (lhs: ArrayObject, rhs: ArrayObject) -> Bool {
        lhs.encoded.slice == rhs.encoded.slice
    }
}

extension ArrayObject: ValueConvertible {
    func toValue() -> ValueConversion.Converted { .value(encoded.decode()) }
}
