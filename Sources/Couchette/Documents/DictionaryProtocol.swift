import Foundation

/// Read access shared by ``Document``, ``MutableDocument``, ``DictionaryObject`` and
/// ``MutableDictionaryObject``.
///
/// Typed getters coerce as Couchbase Lite does: a missing or mistyped value gives `nil` for
/// optionals, `0` for numbers and `false` for `bool(forKey:)` (which is true for any non-null,
/// non-zero, non-false value).
///
/// ```swift
/// let doc = try await collection.document(id: "user-1")
/// let age = doc?.int(forKey: "age") ?? 0          // 0 when missing or not a number
/// let city = doc?["address"]["city"].string        // nested, via fragments
/// ```
public protocol DictionaryProtocol {
    /// Number of properties.
    var count: Int { get }
    /// Property names.
    var keys: [String] { get }
    /// The value of a property: `String`, `Int`, `Double`, `Bool`, `NSNull` for JSON null, an
    /// array or dictionary object for containers; nil when the property does not exist.
    ///
    /// Numbers keep their kind: `1` is an `Int` and `1.0` a `Double`. An integer beyond `Int64`
    /// (which CouchDB keeps exactly, such as `123456789012345678901234567890`) is stored with all
    /// its digits; here it is an exact `Decimal` (up to 38 significant digits, else the nearest
    /// `Double`), `double(forKey:)` gives the nearest `Double`, `int64(forKey:)` clamps it to
    /// `Int64.min`/`Int64.max`, and JSON output writes its digits unchanged.
    func value(forKey key: String) -> Any?
    /// A plain-Swift copy: nested containers as `[String: Any]` and `[Any]`, JSON null as `NSNull`.
    func toDictionary() -> [String: Any]
}

extension DictionaryProtocol {
    /// Whether the property exists; true for a property holding JSON null too.
    public func contains(key: String) -> Bool { value(forKey: key) != nil }
    /// The property as a `String`, or nil when it is missing or not a string (numbers are not
    /// converted).
    public func string(forKey key: String) -> String? { Coercion.string(value(forKey: key)) }
    /// The property as an `Int`: doubles truncated toward zero, `true` as 1, 0 for missing values and
    /// non-numbers.
    public func int(forKey key: String) -> Int { Coercion.int(value(forKey: key)) }
    /// The property as an `Int64`: doubles truncated, integers beyond `Int64` clamped, 0 for
    /// non-numbers.
    public func int64(forKey key: String) -> Int64 { Coercion.int64(value(forKey: key)) }
    /// The property as a `Double`: integers (beyond `Int64` too) as the nearest `Double`, 0 for
    /// non-numbers.
    public func double(forKey key: String) -> Double { Coercion.double(value(forKey: key)) }
    /// The property as a `Float`, converted from ``double(forKey:)`` (0 for non-numbers).
    public func float(forKey key: String) -> Float { Float(Coercion.double(value(forKey: key))) }
    /// The property as a `Bool` with Couchbase Lite's truthiness: false for a missing property, JSON
    /// null, `false` and zero; true for anything else, strings and containers included.
    public func bool(forKey key: String) -> Bool { Coercion.bool(value(forKey: key)) }
    /// Couchbase Lite's spelling of ``bool(forKey:)``.
    public func boolean(forKey key: String) -> Bool { bool(forKey: key) }
    /// The property as an `NSNumber` (integers, doubles, booleans and exact large integers as
    /// `NSDecimalNumber`), or nil when it is not a number.
    public func number(forKey key: String) -> NSNumber? { Coercion.number(value(forKey: key)) }
    /// Parses an ISO-8601 string property; nil for anything else.
    public func date(forKey key: String) -> Date? { Coercion.date(value(forKey: key)) }
    /// The property as a ``Blob``: a blob set on a mutable document, or a stored blob dictionary
    /// (`@type: "blob"`, or an entry of CouchDB's `_attachments`); nil for anything else.
    ///
    /// ```swift
    /// let data = try await doc.blob(forKey: "avatar")?.content()
    /// ```
    public func blob(forKey key: String) -> Blob? { Coercion.blob(value(forKey: key)) }
    /// The property as compact JSON text.
    public func toJSON() -> String {
        JSON.string(from: (try? ValueConversion.strict(toDictionary())) ?? .dictionary([:]))
    }
}
