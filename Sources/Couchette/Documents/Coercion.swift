import Foundation

/// Couchbase Lite's getter coercions, applied to the plain Swift values that `value(forKey:)`
/// returns: `int` of a non-number is 0, `bool` is false only for null, false and zero, `date`
/// parses ISO-8601 strings.
enum Coercion {
    static func string(_ any: Any?) -> String? { any as? String }

    /// A ``Blob`` set on a mutable document, or the blob a stored blob dictionary describes.
    static func blob(_ any: Any?) -> Blob? {
        switch any {
        case let blob as Blob: blob
        case let dictionary as DictionaryObject: Blob(properties: dictionary.toDictionary())
        case let dictionary as MutableDictionaryObject: Blob(properties: dictionary.toDictionary())
        case let dictionary as [String: Any]: Blob(properties: dictionary)
        default: nil
        }
    }

    static func int64(_ any: Any?) -> Int64 {
        switch any {
        case let number as Int: Int64(number)
        case let number as Double: Value.double(number).asInt64
        case let number as Decimal: Value.double(NSDecimalNumber(decimal: number).doubleValue).asInt64  // clamped
        case let flag as Bool: flag ? 1 : 0
        default: 0
        }
    }

    static func int(_ any: Any?) -> Int { Int(int64(any)) }

    /// ``int64(_:)`` of a stored value (nil: missing), read where it lies: an integer, the usual
    /// case, is neither boxed as `Any` nor cast back.
    static func int64(stored value: EncodedValue?) -> Int64 {
        guard let value else { return 0 }
        return value.integer ?? int64(ImmutableValues.wrap(value))
    }

    static func double(_ any: Any?) -> Double {
        switch any {
        case let number as Int: Double(number)
        case let number as Double: number
        case let number as Decimal: NSDecimalNumber(decimal: number).doubleValue
        case let flag as Bool: flag ? 1 : 0
        default: 0
        }
    }

    static func bool(_ any: Any?) -> Bool {
        switch any {
        case nil: false
        case is NSNull: false
        case let flag as Bool: flag
        case let number as Int: number != 0
        case let number as Double: number != 0
        default: true
        }
    }

    static func date(_ any: Any?) -> Date? {
        (any as? String).flatMap(ISO8601.date(from:))
    }

    /// A number for `NSNumber`-style access, nil for anything that is not a number.
    static func number(_ any: Any?) -> NSNumber? {
        switch any {
        case let number as Int: NSNumber(value: number)
        case let number as Double: NSNumber(value: number)
        case let number as Decimal: NSDecimalNumber(decimal: number)
        case let flag as Bool: NSNumber(value: flag)
        default: nil
        }
    }
}
