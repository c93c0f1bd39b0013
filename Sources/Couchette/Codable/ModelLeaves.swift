import Foundation

// How the document encoders (``ModelEncoder``, buffered, and ``StreamingModelEncoder``) store the
// values that need no encoder of their own, and the errors both report in the same words.

extension EncodingContext {
    /// The stored form of a common leaf (or array of leaves), with no encoder per value; nil for
    /// any other type.
    func leaf<T: Encodable>(_ value: T, at path: [any CodingKey], key: (any CodingKey)?) throws -> Value? {
        if T.self == String.self { return .string(same(value, as: String.self)) }
        if T.self == Int.self { return .int(Int64(same(value, as: Int.self))) }
        if T.self == Double.self { return .double(same(value, as: Double.self)) }
        if T.self == Bool.self { return .bool(same(value, as: Bool.self)) }
        if T.self == [String].self { return .array(same(value, as: [String].self).map(Value.string)) }
        if T.self == [Int].self { return .array(same(value, as: [Int].self).map { .int(Int64($0)) }) }
        if T.self == [Double].self { return .array(same(value, as: [Double].self).map(Value.double)) }
        if T.self == Date.self { return .string(try Self.storedText(of: same(value, as: Date.self), at: path, key: key)) }
        if T.self == DocumentID.self {
            // A nested model's id: a normal string field.
            return same(value, as: DocumentID.self).wrappedValue.map(Value.string) ?? .null
        }
        if T.self == URL.self { return .string(same(value, as: URL.self).absoluteString) }
        if T.self == UUID.self { return .string(same(value, as: UUID.self).uuidString) }
        if T.self == Decimal.self { return ValueConversion.number(same(value, as: Decimal.self)) }
        if T.self == Blob.self { return try store(same(value, as: Blob.self), at: Self.describe(path, key)) }
        if T.self == Data.self {
            throw CouchetteError(
                .invalidParameter,
                "Data at '\(Self.describe(path, key))' cannot be stored in a document property: use a Blob for binary data")
        }
        return nil
    }

    /// The ISO-8601 text a date is stored as.
    ///
    /// - Throws: `.invalidParameter` for a date outside the years 0000...9999.
    static func storedText(of date: Date, at path: [any CodingKey], key: (any CodingKey)?) throws -> String {
        guard ISO8601.canFormat(date) else {
            throw CouchetteError(
                .invalidParameter,
                "date \(date.timeIntervalSince1970) s after 1970 at '\(describe(path, key))' cannot be stored: "
                    + "it is outside the years 0000...9999")
        }
        return ISO8601.string(from: date)
    }

    /// An integer of any width as a stored 64-bit integer.
    func integer<T: BinaryInteger>(_ value: T, at path: [any CodingKey], key: (any CodingKey)?) throws -> Value {
        if let number = Int64(exactly: value) { return .int(number) }
        // Beyond Int64 (a UInt64, an Int128): kept exactly, as CouchDB keeps it.
        guard let large = LargeInteger(text: String(value)) else {
            throw CouchetteError(.invalidParameter, "\(T.self) \(value) at '\(Self.describe(path, key))' cannot be stored")
        }
        return .largeInteger(large)
    }

    /// Refuses a value nested too deep before its `encode(to:)` runs: a model graph with a cycle
    /// would otherwise recurse until the stack overflows.
    static func checkNesting<T>(_ type: T.Type, at path: [any CodingKey], key: (any CodingKey)?) throws {
        guard path.count < ValueEncoder.maximumDepth else {
            throw CouchetteError(
                .invalidParameter,
                "\(T.self) at '\(describe(path, key))' is nested deeper than \(ValueEncoder.maximumDepth) levels "
                    + "(does an object contain itself?)")
        }
    }

    static func describe(_ path: [any CodingKey], _ key: (any CodingKey)?) -> String {
        CodingPath.describe(key.map { path + [$0] } ?? path)
    }
}
