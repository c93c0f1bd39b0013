/// An immutable array inside a ``Document``; reads straight from the stored bytes.
public struct ArrayObject: ArrayProtocol, Sendable, Equatable {
    let encoded: EncodedValue

    init(encoded: EncodedValue) { self.encoded = encoded }

    public var count: Int { encoded.count }

    public func value(at index: Int) -> Any? {
        encoded.element(at: index).map(ImmutableValues.wrap)
    }

    public func array(at index: Int) -> ArrayObject? { value(at: index) as? ArrayObject }
    public func dictionary(at index: Int) -> DictionaryObject? { value(at: index) as? DictionaryObject }
    public subscript(index: Int) -> Fragment { Fragment(value(at: index)) }

    public func toArray() -> [Any] { ValueConversion.plainArray(encoded) }
    public func toJSON() -> String { JSON.string(from: encoded.decode()) }
    public func toMutable() -> MutableArrayObject { MutableArrayObject(encoded: encoded) }

    public static func == (lhs: ArrayObject, rhs: ArrayObject) -> Bool {
        lhs.encoded.slice == rhs.encoded.slice
    }
}

extension ArrayObject: ValueConvertible {
    func toValue() -> ValueConversion.Converted { .value(encoded.decode()) }
}
