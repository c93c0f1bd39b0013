import Foundation

/// Decodes models (any `Decodable`) straight from a stored document body, reading each property
/// from the binary format as it is asked for — no JSON text, no intermediate dictionary.
///
/// The mapping mirrors ``DocumentEncoder``, and follows `JSONDecoder` where Couchbase Lite is silent:
///
/// - A non-optional property whose key is missing throws `DecodingError.keyNotFound`; one whose
///   value is null throws `DecodingError.valueNotFound`. Optionals read a missing key or null as nil.
/// - A value of the wrong kind (`"contacts": 5` where an array is expected) throws
///   `DecodingError.typeMismatch`.
/// - Integers are range-checked: `Int64.max` stored, decoded as `Int16`, throws
///   `DecodingError.dataCorrupted`. A double decodes as an integer only when it is integral.
/// - `Date` reads ISO-8601 strings, with or without fractional seconds, in UTC or with an offset
///   (`2024-05-01T09:30:00.000Z`, `2024-05-01T09:30:00Z`, `2024-05-01T11:30:00+02:00`, `2024-05-01`).
/// - `URL` and `UUID` read their string forms; `Decimal` reads numbers; enums read raw values.
///
/// At the root of a model read from a collection, `@DocumentID` is not read from the body: it
/// becomes the document's id, bound to the document's revision. Everywhere else (nested models,
/// values without a document) it is read from its key like an optional string.
///
/// Every failure is a `DecodingError` whose coding path names the property.
enum DocumentDecoder {
    /// Decodes `type` from `document`, binding the model's `@DocumentID` to the document's id and
    /// revision.
    ///
    /// - Throws: `DecodingError` when the body does not fit `type`; `.invalidParameter` when
    ///   `type` has no `@DocumentID` property (or more than one).
    static func decodeModel<T: Decodable & AnyObject>(_ type: T.Type, from document: Document) throws -> T {
        let context = DocumentContext(id: document.id, revisionID: document.revisionID)
        let model = try T(from: ModelDecoder(value: document.root, codingPath: [], document: context))
        if !context.decodedID {
            // A hand-written init(from:) that did not decode its @DocumentID through the container.
            let wrapper = try DocumentIDLocator.wrapper(in: model)
            if let revisionID = document.revisionID {
                wrapper.bind(id: document.id, revisionID: revisionID)
            } else {
                wrapper.wrappedValue = document.id
            }
        }
        return model
    }

    /// Decodes any `Decodable` from an encoded value, without a document: `@DocumentID`s read
    /// their keys like optional strings.
    static func decode<T: Decodable>(_ type: T.Type, from value: EncodedValue) throws -> T {
        try ModelDecoder(value: value, codingPath: [], document: nil).unwrap(T.self, from: value, at: [], key: nil)
    }
}

/// The document a model is being decoded from: what the model's own `@DocumentID` becomes.
final class DocumentContext {
    let id: String
    let revisionID: String?
    /// Whether the model's `@DocumentID` was decoded through the decoder (else reflection finds it).
    private(set) var decodedID = false

    init(id: String, revisionID: String?) {
        self.id = id
        self.revisionID = revisionID
    }

    /// A `@DocumentID` showing this document, bound to its revision.
    func makeDocumentID() -> DocumentID {
        let wrapper = DocumentID(wrappedValue: id)
        if let revisionID { wrapper.bind(id: id, revisionID: revisionID) }
        noteDecoded(wrapper)
        return wrapper
    }

    func noteDecoded(_ wrapper: DocumentID) {
        decodedID = true
    }
}

/// The `Decoder` handed to `init(from:)`; also its own single-value container.
final class ModelDecoder: Decoder {
    let value: EncodedValue
    let codingPath: [any CodingKey]
    /// Set for the model's root and its super-decoders: where `@DocumentID` is the document's id.
    let document: DocumentContext?
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    init(value: EncodedValue, codingPath: [any CodingKey], document: DocumentContext?) {
        self.value = value
        self.codingPath = codingPath
        self.document = document
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        guard value.isDictionary else {
            throw Self.mismatch([String: Any].self, "a dictionary", value, at: codingPath, key: nil)
        }
        return KeyedDecodingContainer(ModelKeyedDecodingContainer<Key>(decoder: self, dictionary: value, codingPath: codingPath))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        guard value.isArray else {
            throw Self.mismatch([Any].self, "an array", value, at: codingPath, key: nil)
        }
        return ModelUnkeyedDecodingContainer(decoder: self, array: value, codingPath: codingPath)
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer { self }

    /// A decoder for a value below this one; never a model root.
    func child(_ value: EncodedValue, at path: [any CodingKey], key: (any CodingKey)?) -> ModelDecoder {
        ModelDecoder(value: value, codingPath: key.map { path + [$0] } ?? path, document: nil)
    }

    // MARK: - Unwrapping values

    func unwrap<T: Decodable>(_ type: T.Type, from value: EncodedValue, at path: [any CodingKey], key: (any CodingKey)?) throws -> T {
        // Fast paths for the common leaves and arrays of them (no decoder or container per value).
        if T.self == String.self { return same(try unwrapString(value, at: path, key: key), as: T.self) }
        if T.self == Int.self { return same(try unwrapInteger(value, as: Int.self, at: path, key: key), as: T.self) }
        if T.self == Double.self { return same(try unwrapFloatingPoint(value, as: Double.self, at: path, key: key), as: T.self) }
        if T.self == Bool.self { return same(try unwrapBool(value, at: path, key: key), as: T.self) }
        if T.self == [String].self {
            return same(try unwrapArray(value, at: path, key: key) { try self.unwrapString($0, at: $1, key: $2) }, as: T.self)
        }
        if T.self == [Int].self {
            return same(
                try unwrapArray(value, at: path, key: key) { try self.unwrapInteger($0, as: Int.self, at: $1, key: $2) }, as: T.self)
        }
        if T.self == [Double].self {
            return same(
                try unwrapArray(value, at: path, key: key) { try self.unwrapFloatingPoint($0, as: Double.self, at: $1, key: $2) },
                as: T.self)
        }
        if T.self == Date.self {
            let text = try unwrapString(value, as: Date.self, at: path, key: key)
            guard let date = ISO8601.date(from: text) else {
                throw Self.corrupted("Expected an ISO-8601 date string, found '\(text)'.", at: path, key: key)
            }
            return same(date, as: T.self)
        }
        if T.self == DocumentID.self {
            // A nested model's id: an optional string field.
            let id = value.isNull ? nil : try unwrapString(value, as: DocumentID.self, at: path, key: key)
            return same(DocumentID(wrappedValue: id), as: T.self)
        }
        if T.self == URL.self {
            let text = try unwrapString(value, as: URL.self, at: path, key: key)
            guard let url = URL(string: text) else { throw Self.corrupted("Invalid URL string '\(text)'.", at: path, key: key) }
            return same(url, as: T.self)
        }
        if T.self == UUID.self {
            let text = try unwrapString(value, as: UUID.self, at: path, key: key)
            guard let uuid = UUID(uuidString: text) else { throw Self.corrupted("Invalid UUID string '\(text)'.", at: path, key: key) }
            return same(uuid, as: T.self)
        }
        if T.self == Decimal.self {
            if let integer = value.integer { return same(Decimal(integer), as: T.self) }
            if let exact = value.largeInteger?.decimal { return same(exact, as: T.self) }
            let number = try unwrapFloatingPoint(value, as: Double.self, at: path, key: key)
            return same(Decimal(string: "\(number)") ?? Decimal(number), as: T.self)
        }
        if T.self == Data.self {
            throw DecodingError.typeMismatch(
                Data.self,
                DecodingError.Context(
                    codingPath: key.map { path + [$0] } ?? path,
                    debugDescription: "Data cannot be stored in a document property: use a Blob for binary data."))
        }
        return try T(from: child(value, at: path, key: key))
    }

    /// An array whose elements `element` unwraps (given the element, the array's path and the
    /// element's key).
    private func unwrapArray<Element>(
        _ value: EncodedValue, at path: [any CodingKey], key: (any CodingKey)?,
        element: (EncodedValue, [any CodingKey], any CodingKey) throws -> Element
    ) throws -> [Element] {
        guard value.isArray else { throw Self.mismatch([Element].self, "an array", value, at: path, key: key) }
        let arrayPath = key.map { path + [$0] } ?? path
        let count = value.count
        var elements: [Element] = []
        elements.reserveCapacity(count)
        for index in 0..<count {
            let item = value.element(at: index) ?? EncodedValue(bytes: [ValueTag.null])
            elements.append(try element(item, arrayPath, CodingPath.IndexKey(index)))
        }
        return elements
    }

    func unwrapBool(_ value: EncodedValue, at path: [any CodingKey], key: (any CodingKey)?) throws -> Bool {
        if let flag = value.bool { return flag }
        throw Self.mismatch(Bool.self, "a boolean", value, at: path, key: key)
    }

    func unwrapString(_ value: EncodedValue, at path: [any CodingKey], key: (any CodingKey)?) throws -> String {
        try unwrapString(value, as: String.self, at: path, key: key)
    }

    private func unwrapString<T>(_ value: EncodedValue, as type: T.Type, at path: [any CodingKey], key: (any CodingKey)?) throws -> String {
        if let text = value.string { return text }
        throw Self.mismatch(T.self, "a string", value, at: path, key: key)
    }

    /// An integer of type `T`, refusing values out of its range and non-integral doubles.
    func unwrapInteger<T: FixedWidthInteger>(
        _ value: EncodedValue, as type: T.Type, at path: [any CodingKey],
        key: (any CodingKey)?
    ) throws -> T {
        if let number = value.integer {
            guard let result = T(exactly: number) else {
                throw Self.corrupted("Number \(number) does not fit in \(T.self).", at: path, key: key)
            }
            return result
        }
        if let large = value.largeInteger {
            guard let result = T(large.text) else {
                throw Self.corrupted("Number \(large) does not fit in \(T.self).", at: path, key: key)
            }
            return result
        }
        if let number = value.double {
            guard let result = T(exactly: number) else {
                throw Self.corrupted("Number \(number) is not representable as \(T.self).", at: path, key: key)
            }
            return result
        }
        throw Self.mismatch(T.self, "a number", value, at: path, key: key)
    }

    func unwrapFloatingPoint<T: BinaryFloatingPoint>(
        _ value: EncodedValue, as type: T.Type, at path: [any CodingKey],
        key: (any CodingKey)?
    ) throws -> T {
        if let number = value.double {
            let result = T(number)
            guard result.isFinite else {
                throw Self.corrupted("Number \(number) does not fit in \(T.self).", at: path, key: key)
            }
            return result
        }
        if let number = value.integer { return T(number) }
        if let large = value.largeInteger { return T(large.double) }
        throw Self.mismatch(T.self, "a number", value, at: path, key: key)
    }

    // MARK: - Errors

    /// `valueNotFound` for null, `typeMismatch` for anything else of the wrong kind.
    static func mismatch(
        _ type: Any.Type, _ expected: String, _ value: EncodedValue, at path: [any CodingKey],
        key: (any CodingKey)?
    ) -> DecodingError {
        let codingPath = key.map { path + [$0] } ?? path
        if value.isNull {
            return DecodingError.valueNotFound(
                type,
                DecodingError.Context(
                    codingPath: codingPath, debugDescription: "Expected \(expected) (\(type)) but found null instead."))
        }
        return DecodingError.typeMismatch(
            type,
            DecodingError.Context(
                codingPath: codingPath, debugDescription: "Expected \(expected) (\(type)) but found \(describe(value)) instead."))
    }

    static func corrupted(_ message: String, at path: [any CodingKey], key: (any CodingKey)?) -> DecodingError {
        DecodingError.dataCorrupted(DecodingError.Context(codingPath: key.map { path + [$0] } ?? path, debugDescription: message))
    }

    private static func describe(_ value: EncodedValue) -> String {
        switch value.tag {
        case ValueTag.null: "null"
        case ValueTag.trueValue, ValueTag.falseValue: "a boolean"
        case ValueTag.int8, ValueTag.int16, ValueTag.int32, ValueTag.int64, ValueTag.largeInteger: "an integer"
        case ValueTag.double: "a number"
        case ValueTag.string: "a string"
        case ValueTag.array: "an array"
        case ValueTag.dictionary: "a dictionary"
        default: "damaged data"
        }
    }
}

// MARK: - Single value container

extension ModelDecoder: SingleValueDecodingContainer {
    func decodeNil() -> Bool { value.isNull }
    func decode(_ type: Bool.Type) throws -> Bool { try unwrapBool(value, at: codingPath, key: nil) }
    func decode(_ type: String.Type) throws -> String { try unwrapString(value, at: codingPath, key: nil) }
    func decode(_ type: Double.Type) throws -> Double { try unwrapFloatingPoint(value, as: type, at: codingPath, key: nil) }
    func decode(_ type: Float.Type) throws -> Float { try unwrapFloatingPoint(value, as: type, at: codingPath, key: nil) }
    func decode(_ type: Int.Type) throws -> Int { try unwrapInteger(value, as: type, at: codingPath, key: nil) }
    func decode(_ type: Int8.Type) throws -> Int8 { try unwrapInteger(value, as: type, at: codingPath, key: nil) }
    func decode(_ type: Int16.Type) throws -> Int16 { try unwrapInteger(value, as: type, at: codingPath, key: nil) }
    func decode(_ type: Int32.Type) throws -> Int32 { try unwrapInteger(value, as: type, at: codingPath, key: nil) }
    func decode(_ type: Int64.Type) throws -> Int64 { try unwrapInteger(value, as: type, at: codingPath, key: nil) }
    func decode(_ type: Int128.Type) throws -> Int128 { try unwrapInteger(value, as: type, at: codingPath, key: nil) }
    func decode(_ type: UInt.Type) throws -> UInt { try unwrapInteger(value, as: type, at: codingPath, key: nil) }
    func decode(_ type: UInt8.Type) throws -> UInt8 { try unwrapInteger(value, as: type, at: codingPath, key: nil) }
    func decode(_ type: UInt16.Type) throws -> UInt16 { try unwrapInteger(value, as: type, at: codingPath, key: nil) }
    func decode(_ type: UInt32.Type) throws -> UInt32 { try unwrapInteger(value, as: type, at: codingPath, key: nil) }
    func decode(_ type: UInt64.Type) throws -> UInt64 { try unwrapInteger(value, as: type, at: codingPath, key: nil) }
    func decode(_ type: UInt128.Type) throws -> UInt128 { try unwrapInteger(value, as: type, at: codingPath, key: nil) }

    func decode<T: Decodable>(_ type: T.Type) throws -> T {
        if T.self == DocumentID.self, let document { return same(document.makeDocumentID(), as: T.self) }
        return try unwrap(T.self, from: value, at: codingPath, key: nil)
    }
}
