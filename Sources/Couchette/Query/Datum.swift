/// A value flowing through a query's evaluators.
///
/// MISSING is not a case: evaluators return `Datum?` and `nil` is MISSING, so it can never be
/// confused with JSON null (``Datum/null``). Containers read from a stored document stay in their
/// encoded bytes (``Datum/stored(_:)``) until something asks for their elements; containers built
/// by the query (literals, function results) are plain Swift arrays and dictionaries.
enum Datum: Sendable {
    case null
    case bool(Bool)
    case int(Int64)
    case double(Double)
    /// An integer beyond `Int64`: compares exactly, computes as its nearest Double.
    case largeInteger(LargeInteger)
    case string(String)
    /// An array or dictionary still in its stored encoding.
    case stored(EncodedValue)
    case array([Datum])
    case object([String: Datum])

    /// Wraps an encoded value: scalars are read out, containers stay encoded.
    init(_ encoded: EncodedValue) {
        let scalar = encoded.bytes.withUnsafeBytes { buffer in
            Datum(scalar: BorrowedValue(buffer: buffer, offset: encoded.offset, depth: encoded.depth))
        }
        self = scalar ?? .stored(encoded)
    }

    /// A scalar read where it lies; nil for an array or a dictionary (which a ``Datum`` keeps in
    /// an owned ``EncodedValue``). Damaged bytes read as null.
    init?(scalar value: BorrowedValue) {
        switch value.tag {
        case ValueTag.falseValue: self = .bool(false)
        case ValueTag.trueValue: self = .bool(true)
        case ValueTag.int8, ValueTag.int16, ValueTag.int32, ValueTag.int64: self = value.integer.map(Datum.int) ?? .null
        case ValueTag.double: self = value.double.map(Datum.double) ?? .null
        case ValueTag.largeInteger: self = value.largeInteger.map(Datum.largeInteger) ?? .null
        case ValueTag.string: self = value.string.map(Datum.string) ?? .null
        case ValueTag.array, ValueTag.narrowArray, ValueTag.dictionary, ValueTag.narrowDictionary: return nil
        default: self = .null
        }
    }

    init(_ value: Value) {
        switch value {
        case .null: self = .null
        case .bool(let flag): self = .bool(flag)
        case .int(let number): self = .int(number)
        case .double(let number): self = .double(number)
        case .largeInteger(let number): self = .largeInteger(number)
        case .string(let text): self = .string(text)
        case .array(let elements): self = .array(elements.map(Datum.init))
        case .dictionary(let entries): self = .object(entries.mapValues(Datum.init))
        }
    }

    /// A double result, or null when it is not a finite number (JSON has no NaN or infinity).
    static func number(_ value: Double) -> Datum { value.isFinite ? .double(value) : .null }

    // MARK: - Shape

    enum Kind: Int, Comparable {
        case missing = 0, null, boolean, number, string, array, object

        static func < (lhs: Kind, rhs: Kind) -> Bool { lhs.rawValue < rhs.rawValue }
    }

    var kind: Kind {
        switch self {
        case .null: .null
        case .bool: .boolean
        case .int, .double, .largeInteger: .number
        case .string: .string
        case .array: .array
        case .object: .object
        case .stored(let encoded): encoded.isArray ? .array : .object
        }
    }

    var isNull: Bool { if case .null = self { true } else { false } }

    /// The number, for numeric values only.
    var number: Double? {
        switch self {
        case .int(let value): Double(value)
        case .double(let value): value
        case .largeInteger(let value): value.double
        default: nil
        }
    }

    var string: String? { if case .string(let text) = self { text } else { nil } }

    /// The elements of an array, or nil for anything else.
    var elements: [Datum]? {
        switch self {
        case .array(let elements): return elements
        case .stored(let encoded) where encoded.isArray:
            return (0..<encoded.count).map { encoded.element(at: $0).map(Datum.init) ?? .null }
        default: return nil
        }
    }

    /// The entries of a dictionary, or nil for anything else.
    var entries: [String: Datum]? {
        switch self {
        case .object(let entries): return entries
        case .stored(let encoded) where encoded.isDictionary:
            var result: [String: Datum] = [:]
            for (key, value) in encoded.entries { result[key] = Datum(value) }
            return result
        default: return nil
        }
    }

    /// Number of elements of an array or entries of a dictionary.
    var containerCount: Int? {
        switch self {
        case .array(let elements): elements.count
        case .object(let entries): entries.count
        case .stored(let encoded): encoded.count
        default: nil
        }
    }

    /// The property `key` of a dictionary; MISSING for anything else.
    func member(_ key: String) -> Datum? {
        switch self {
        case .object(let entries): entries[key]
        case .stored(let encoded): encoded.value(forKey: key).map(Datum.init)
        default: nil
        }
    }

    /// The element at `index` of an array (negative counts from the end); MISSING otherwise.
    func element(_ index: Int) -> Datum? {
        switch self {
        case .array(let elements):
            let position = index < 0 ? elements.count + index : index
            return elements.indices.contains(position) ? elements[position] : nil
        case .stored(let encoded):
            let position = index < 0 ? encoded.count + index : index
            return encoded.element(at: position).map(Datum.init)
        default: return nil
        }
    }

    // MARK: - Conversion

    /// The plain value, decoding stored containers. MISSING members of built objects are dropped.
    var value: Value {
        switch self {
        case .null: .null
        case .bool(let flag): .bool(flag)
        case .int(let number): .int(number)
        case .double(let number): number.isFinite ? .double(number) : .null
        case .largeInteger(let number): .largeInteger(number)
        case .string(let text): .string(text)
        case .stored(let encoded): encoded.decode()
        case .array(let elements): .array(elements.map(\.value))
        case .object(let entries): .dictionary(entries.mapValues(\.value))
        }
    }

    /// The plain Swift value (`[String: Any]`, `[Any]`, `String`, …), stored containers converted
    /// straight from their encoding.
    var plain: Any {
        if case .stored(let encoded) = self { return ValueConversion.plain(encoded) }
        return ValueConversion.plain(value)
    }

    /// Whether two result columns hold equal values (MISSING equals only MISSING): stored
    /// containers compare by their canonical bytes before falling back to decoding.
    static func sameResult(_ lhs: Datum?, _ rhs: Datum?) -> Bool {
        switch (lhs, rhs) {
        case (nil, nil): true
        case (.stored(let left)?, .stored(let right)?): left.sliceBytes == right.sliceBytes || left.decode() == right.decode()
        case (let left?, let right?): left.value == right.value
        default: false
        }
    }

    /// Truthiness in WHERE, HAVING, CASE WHEN and the logical operators (Couchbase Lite's
    /// boolean coercion): false, null, zero are false; every other value is true.
    var isTruthy: Bool {
        switch self {
        case .null: false
        case .bool(let flag): flag
        case .int(let value): value != 0
        case .double(let value): value != 0
        default: true
        }
    }
}
