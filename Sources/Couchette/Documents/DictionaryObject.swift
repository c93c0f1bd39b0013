/// An immutable dictionary inside a ``Document``; reads straight from the stored bytes.
///
/// ```swift
/// if let address = doc.dictionary(forKey: "address") {
///     print(address.string(forKey: "city") ?? "?")
/// }
/// ```
public struct DictionaryObject: DictionaryProtocol, Sendable, Equatable {
    let encoded: EncodedValue

    init(encoded: EncodedValue) { self.encoded = encoded }

    public var count: Int { encoded.count }
    public var keys: [String] { encoded.keys }

    public func value(forKey key: String) -> Any? {
        encoded.value(forKey: key).map(ImmutableValues.wrap)
    }

    public func array(forKey key: String) -> ArrayObject? { value(forKey: key) as? ArrayObject }
    public func dictionary(forKey key: String) -> DictionaryObject? { value(forKey: key) as? DictionaryObject }
    public subscript(key: String) -> Fragment { Fragment(value(forKey: key)) }

    public func toDictionary() -> [String: Any] { ValueConversion.plainDictionary(encoded) }
    public func toJSON() -> String { JSON.string(from: encoded.decode()) }
    /// A mutable copy.
    public func toMutable() -> MutableDictionaryObject { MutableDictionaryObject(encoded: encoded) }

    public static func == (lhs: DictionaryObject, rhs: DictionaryObject) -> Bool {
        lhs.encoded.slice == rhs.encoded.slice
    }
}

enum ImmutableValues {
    /// What the immutable getters return for an encoded value.
    static func wrap(_ encoded: EncodedValue) -> Any {
        switch encoded.tag {
        case ValueTag.dictionary, ValueTag.narrowDictionary: DictionaryObject(encoded: encoded)
        case ValueTag.array, ValueTag.narrowArray: ArrayObject(encoded: encoded)
        default: ValueConversion.plain(encoded)
        }
    }
}

extension DictionaryObject: ValueConvertible {
    func toValue() -> ValueConversion.Converted { .value(encoded.decode()) }
}
