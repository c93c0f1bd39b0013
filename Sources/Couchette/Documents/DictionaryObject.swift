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

    /// The property as an array, or nil when it is missing or not an array.
    public func array(forKey key: String) -> ArrayObject? { value(forKey: key) as? ArrayObject }
    /// The property as a nested dictionary, or nil when it is missing or not a dictionary.
    public func dictionary(forKey key: String) -> DictionaryObject? { value(forKey: key) as? DictionaryObject }
    /// A fragment for path-style reads that never fail: `address["geo"]["lat"].double`.
    public subscript(key: String) -> Fragment { Fragment(value(forKey: key)) }

    public func toDictionary() -> [String: Any] { ValueConversion.plainDictionary(encoded) }
    /// The dictionary as compact JSON text, numbers written as CouchDB writes them.
    public func toJSON() -> String { JSON.string(from: encoded.decode()) }
    /// A mutable copy.
    public func toMutable() -> MutableDictionaryObject { MutableDictionaryObject(encoded: encoded) }

    /// Two dictionaries are equal when their stored bytes are: same keys, same values, same number
    /// kinds (`1` and `1.0` differ).
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
