/// A JSON-compatible value: the data model of every document body and query result.
///
/// Integers and doubles are distinct kinds, as in JSON text: `1` is an integer and `1.0` a double,
/// and each is written back as it came. Integers beyond `Int64` are ``largeInteger(_:)``, kept
/// digit for digit (CouchDB keeps integers of any size). Dictionaries are unordered here; their
/// binary encoding sorts keys by their UTF-8 bytes (see ``ValueEncoder``).
enum Value: Sendable, Equatable {
    case null
    case bool(Bool)
    case int(Int64)
    case double(Double)
    /// An integer outside `Int64`'s range; computed with as its nearest `Double`.
    case largeInteger(LargeInteger)
    case string(String)
    case array([Value])
    case dictionary([String: Value])

    /// The property named `key` of a dictionary, or nil (MISSING) for anything else.
    subscript(key: String) -> Value? {
        if case .dictionary(let entries) = self { return entries[key] }
        return nil
    }

    /// The element at `index` of an array, or nil (MISSING) for anything else or out of range.
    subscript(index: Int) -> Value? {
        if case .array(let elements) = self, elements.indices.contains(index) { return elements[index] }
        return nil
    }
}

extension Value {
    /// Couchbase Lite's numeric coercion: numbers as themselves, booleans as 0 or 1, anything else 0.
    var asDouble: Double {
        switch self {
        case .int(let value): Double(value)
        case .double(let value): value
        case .largeInteger(let value): value.double
        case .bool(let value): value ? 1 : 0
        default: 0
        }
    }

    /// Couchbase Lite's integer coercion: doubles truncated (and clamped), booleans 0 or 1, else 0.
    var asInt64: Int64 {
        switch self {
        case .int(let value): value
        case .double(let value):
            if value.isNaN {
                0
            } else if value >= 9.223372036854775807e18 {
                .max
            } else if value <= -9.223372036854775808e18 {
                .min
            } else {
                Int64(value)
            }
        case .largeInteger(let value): value.clamped
        case .bool(let value): value ? 1 : 0
        default: 0
        }
    }

    /// Couchbase Lite's boolean coercion: false for null, false and zero; true for anything else.
    var asBool: Bool {
        switch self {
        case .null: false
        case .bool(let value): value
        case .int(let value): value != 0
        case .double(let value): value != 0
        default: true  // a large integer is never zero
        }
    }
}
