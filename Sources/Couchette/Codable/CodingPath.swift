/// Coding keys the document encoder and decoder make up, and how coding paths read in messages.
enum CodingPath {
    /// The key of an array element: `"Index 3"`, as Foundation's coders name it.
    struct IndexKey: CodingKey {
        let intValue: Int?
        var stringValue: String { "Index \(intValue ?? 0)" }

        init(_ index: Int) { intValue = index }
        init?(intValue: Int) { self.intValue = intValue }
        init?(stringValue: String) { nil }
    }

    /// A key given as a string, such as `"super"` for ``KeyedEncodingContainer/superEncoder()``.
    struct NamedKey: CodingKey {
        let stringValue: String
        var intValue: Int? { nil }

        init(_ name: String) { stringValue = name }
        init?(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    static let superKey = NamedKey("super")

    /// `contacts[2].name` for the path contacts / Index 2 / name; `(root)` for an empty path.
    static func describe(_ path: [any CodingKey]) -> String {
        var text = ""
        for key in path {
            if key is IndexKey, let index = key.intValue {
                text += "[\(index)]"
            } else {
                text += text.isEmpty ? key.stringValue : ".\(key.stringValue)"
            }
        }
        return text.isEmpty ? "(root)" : text
    }
}

/// `value` as `T`, when the caller has checked that `T` is `U` (`T.self == U.self`): a plain copy,
/// without the runtime cast `as! T` would make on every value of a hot path.
@inline(__always)
func same<U, T>(_ value: U, as type: T.Type) -> T {
    assert(U.self == T.self, "same(_:as:) needs identical types")
    return unsafeBitCast(value, to: T.self)
}
