import Foundation

/// Encodes a model (any `Encodable`) into a document body, straight from the `Encodable` calls
/// into the document value model — no JSON text in between.
///
/// The mapping follows Couchbase Lite:
///
/// | Swift | stored as |
/// |---|---|
/// | `String`, `Bool`, `Double`, `Float` | themselves |
/// | integers | themselves, exactly (beyond `Int64`, as a large integer: see ``LargeInteger``) |
/// | `nil` optionals | an explicit null (the key is present) |
/// | `Date` | an ISO-8601 string with milliseconds, in UTC (`2024-05-01T09:30:00.000Z`) |
/// | `URL`, `UUID` | their string forms |
/// | `Decimal` | a number (an integer when it is one) |
/// | enums | their raw values (through their own `Codable` conformance) |
/// | `Data` | refused: binary data belongs in a `Blob` |
/// | `Blob` | its blob dictionary; the content is stored first (see ``Blob``) |
/// | nested models, arrays, dictionaries | dictionaries and arrays |
///
/// The `@DocumentID` of the model itself (at the root, or in a superclass encoded through
/// `superEncoder()`) is not written: it is the document's id. A nested model's `@DocumentID` is
/// written as a normal string field under its key. `superEncoder()` writes the superclass under
/// the key `"super"`.
///
/// Failures are ``CouchetteError``s with code `.invalidParameter` that name the key path.
enum DocumentEncoder {
    /// A model encoded on the caller's side.
    struct Output {
        /// The document properties (always a dictionary).
        let properties: Value
        /// The model's own `@DocumentID` wrappers met while encoding (normally exactly one).
        let documentIDs: [DocumentID]
        /// Digests of the model's blobs, stored and held in the blob store until the caller
        /// releases them after the commit.
        let heldBlobs: [String]
    }

    /// Encodes `model` as document properties.
    ///
    /// - Throws: `.invalidParameter` when a value cannot be stored (naming its key path) or when
    ///   the model does not encode as a keyed container.
    /// `Blob` properties are stored in `blobs` as they are met (nil: only saved blobs are accepted).
    /// `revisionPosition`: the generation of the revision being written (`revpos` of new blobs),
    /// asked for only when a blob is met (finding it may take reflection).
    static func encode<T: Encodable>(
        _ model: T, blobs: BlobStore? = nil, revisionPosition: @escaping () -> Int64? = { nil }
    ) throws -> Output {
        let context = EncodingContext(blobs: blobs, revisionPosition: revisionPosition)
        do {
            let properties = try run(model, isDocumentRoot: true, context: context)
            guard case .dictionary = properties else {
                throw CouchetteError(
                    .invalidParameter,
                    "\(T.self) must encode as a keyed container (a dictionary of properties), not a single value or an array")
            }
            return Output(properties: properties, documentIDs: context.documentIDs, heldBlobs: context.heldBlobs)
        } catch {
            blobs?.release(context.heldBlobs)
            throw error
        }
    }

    /// Encodes any `Encodable` value (no document root: `@DocumentID`s are written as strings).
    static func encodeValue<T: Encodable>(_ value: T) throws -> Value {
        try run(value, isDocumentRoot: false, context: EncodingContext(blobs: nil, revisionPosition: { nil }))
    }

    private static func run<T: Encodable>(_ value: T, isDocumentRoot: Bool, context: EncodingContext) throws -> Value {
        let encoder = ModelEncoder(codingPath: [], context: context, isDocumentRoot: isDocumentRoot)
        do {
            try value.encode(to: encoder)
        } catch let error as EncodingError {
            throw CouchetteError(.invalidParameter, describe(error))
        }
        if let failure = context.failure { throw failure }
        return try encoder.finishedValue()
    }

    private static func describe(_ error: EncodingError) -> String {
        switch error {
        case .invalidValue(let value, let context):
            "value \(value) at '\(CodingPath.describe(context.codingPath))' cannot be encoded: \(context.debugDescription)"
        @unknown default:
            "encoding failed: \(error)"
        }
    }
}

/// State shared by every encoder of one encoding.
final class EncodingContext {
    private(set) var documentIDs: [DocumentID] = []
    /// Where `Blob` properties are stored; nil when only saved blobs can be encoded.
    let blobs: BlobStore?
    private let resolveRevisionPosition: () -> Int64?
    /// Resolved at the first blob: most models have none.
    private lazy var revisionPosition: Int64? = resolveRevisionPosition()
    private(set) var heldBlobs: [String] = []

    init(blobs: BlobStore?, revisionPosition: @escaping () -> Int64?) {
        self.blobs = blobs
        self.resolveRevisionPosition = revisionPosition
    }

    /// The stored dictionary of `blob`, storing its content first when a store is given.
    func store(_ blob: Blob, at path: String) throws -> Value {
        if let blobs {
            do {
                heldBlobs.append(try blob.install(into: blobs))
            } catch let error as CouchetteError {
                throw CouchetteError(error.code, "Blob at '\(path)': \(error.message)")
            }
        }
        guard blob.digest != nil else {
            throw CouchetteError(.invalidParameter, "Blob at '\(path)' is not saved: save it with Database.saveBlob(blob:) first")
        }
        return blob.storedValue(revisionPosition: revisionPosition)
    }
    /// A misuse met in a method that cannot throw (mixing container kinds); reported at the end.
    private(set) var failure: CouchetteError?

    func noteDocumentID(_ documentID: DocumentID) {
        if !documentIDs.contains(where: { $0 === documentID }) { documentIDs.append(documentID) }
    }

    func fail(_ message: String) {
        if failure == nil { failure = CouchetteError(.invalidParameter, message) }
    }
}

/// A value being encoded: finished, or a container that may still be filled.
enum PendingValue {
    case value(Value)
    case dictionary(PendingDictionary)
    case array(PendingArray)
    /// A super-encoder, whose value is known once the caller has used it.
    case encoder(ModelEncoder)

    func finished() throws -> Value {
        switch self {
        case .value(let value): value
        case .dictionary(let dictionary): .dictionary(try dictionary.entries.mapValues { try $0.finished() })
        case .array(let array): .array(try array.elements.map { try $0.finished() })
        case .encoder(let encoder): try encoder.finishedValue()
        }
    }
}

final class PendingDictionary {
    var entries: [String: PendingValue] = [:]
}

final class PendingArray {
    var elements: [PendingValue] = []
}

/// The `Encoder` handed to `encode(to:)`; also its own single-value container.
final class ModelEncoder: Encoder {
    let codingPath: [any CodingKey]
    let context: EncodingContext
    /// True for the encoder of the model itself and the super-encoders it hands out: a
    /// `@DocumentID` met here is the document's id and is not written.
    let isDocumentRoot: Bool
    var userInfo: [CodingUserInfoKey: Any] { [:] }
    private var storage: PendingValue?

    init(codingPath: [any CodingKey], context: EncodingContext, isDocumentRoot: Bool) {
        self.codingPath = codingPath
        self.context = context
        self.isDocumentRoot = isDocumentRoot
    }

    /// What was encoded; an encoder that encoded nothing gives an empty dictionary.
    func finishedValue() throws -> Value {
        try storage?.finished() ?? .dictionary([:])
    }

    // MARK: - Containers

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        let dictionary: PendingDictionary
        if case .dictionary(let existing)? = storage {
            dictionary = existing  // asked again (a superclass sharing its subclass's encoder)
        } else {
            if storage != nil { mixedContainers("a keyed container") }
            dictionary = PendingDictionary()
            storage = .dictionary(dictionary)
        }
        return KeyedEncodingContainer(ModelKeyedEncodingContainer<Key>(encoder: self, dictionary: dictionary, codingPath: codingPath))
    }

    func unkeyedContainer() -> any UnkeyedEncodingContainer {
        let array: PendingArray
        if case .array(let existing)? = storage {
            array = existing
        } else {
            if storage != nil { mixedContainers("an unkeyed container") }
            array = PendingArray()
            storage = .array(array)
        }
        return ModelUnkeyedEncodingContainer(encoder: self, array: array, codingPath: codingPath)
    }

    func singleValueContainer() -> any SingleValueEncodingContainer { self }

    private func mixedContainers(_ requested: String) {
        context.fail("\(CodingPath.describe(codingPath)): encode(to:) asked for \(requested) after encoding another kind of value there")
    }

    /// The encoder for containers nested inside this one's: never the model's root, so a
    /// `@DocumentID` met there is written like any other value.
    func nested() -> ModelEncoder {
        isDocumentRoot ? ModelEncoder(codingPath: codingPath, context: context, isDocumentRoot: false) : self
    }

    // MARK: - Boxing values

    /// The stored form of one value encoded at `path` + `key` (or at `path` itself when `key` is
    /// nil: a single-value container).
    func box<T: Encodable>(_ value: T, at path: [any CodingKey], key: (any CodingKey)?) throws -> Value {
        // Fast paths for the common leaves and arrays of them (no encoder per value).
        if T.self == String.self { return .string(same(value, as: String.self)) }
        if T.self == Int.self { return .int(Int64(same(value, as: Int.self))) }
        if T.self == Double.self { return .double(same(value, as: Double.self)) }
        if T.self == Bool.self { return .bool(same(value, as: Bool.self)) }
        if T.self == [String].self { return .array(same(value, as: [String].self).map(Value.string)) }
        if T.self == [Int].self { return .array(same(value, as: [Int].self).map { .int(Int64($0)) }) }
        if T.self == [Double].self { return .array(same(value, as: [Double].self).map(Value.double)) }
        if T.self == Date.self {
            let date = same(value, as: Date.self)
            guard ISO8601.canFormat(date) else {
                throw CouchetteError(
                    .invalidParameter,
                    "date \(date.timeIntervalSince1970) s after 1970 at '\(Self.describe(path, key))' cannot be stored: "
                        + "it is outside the years 0000...9999")
            }
            return .string(ISO8601.string(from: date))
        }
        if T.self == DocumentID.self {
            // A nested model's id: a normal string field.
            return same(value, as: DocumentID.self).wrappedValue.map(Value.string) ?? .null
        }
        if T.self == URL.self { return .string(same(value, as: URL.self).absoluteString) }
        if T.self == UUID.self { return .string(same(value, as: UUID.self).uuidString) }
        if T.self == Decimal.self { return ValueConversion.number(same(value, as: Decimal.self)) }
        if T.self == Blob.self { return try context.store(same(value, as: Blob.self), at: Self.describe(path, key)) }
        if T.self == Data.self {
            throw CouchetteError(
                .invalidParameter,
                "Data at '\(Self.describe(path, key))' cannot be stored in a document property: use a Blob for binary data")
        }
        guard path.count < ValueEncoder.maximumDepth else {
            // A model graph with a cycle would otherwise recurse until the stack overflows.
            throw CouchetteError(
                .invalidParameter,
                "\(T.self) at '\(Self.describe(path, key))' is nested deeper than \(ValueEncoder.maximumDepth) levels "
                    + "(does an object contain itself?)")
        }
        let child = ModelEncoder(codingPath: key.map { path + [$0] } ?? path, context: context, isDocumentRoot: false)
        try value.encode(to: child)
        return try child.finishedValue()
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

    private static func describe(_ path: [any CodingKey], _ key: (any CodingKey)?) -> String {
        CodingPath.describe(key.map { path + [$0] } ?? path)
    }
}

// MARK: - Single value container

extension ModelEncoder: SingleValueEncodingContainer {
    private func store(_ value: Value) {
        if storage != nil {
            context.fail("\(CodingPath.describe(codingPath)): encode(to:) encoded two values into one single-value container")
        }
        storage = .value(value)
    }

    func encodeNil() throws { store(.null) }
    func encode(_ value: Bool) throws { store(.bool(value)) }
    func encode(_ value: String) throws { store(.string(value)) }
    func encode(_ value: Double) throws { store(.double(value)) }
    func encode(_ value: Float) throws { store(.double(Double(value))) }
    func encode(_ value: Int) throws { store(.int(Int64(value))) }
    func encode(_ value: Int8) throws { store(.int(Int64(value))) }
    func encode(_ value: Int16) throws { store(.int(Int64(value))) }
    func encode(_ value: Int32) throws { store(.int(Int64(value))) }
    func encode(_ value: Int64) throws { store(.int(value)) }
    func encode(_ value: Int128) throws { store(try integer(value, at: codingPath, key: nil)) }
    func encode(_ value: UInt) throws { store(try integer(value, at: codingPath, key: nil)) }
    func encode(_ value: UInt8) throws { store(.int(Int64(value))) }
    func encode(_ value: UInt16) throws { store(.int(Int64(value))) }
    func encode(_ value: UInt32) throws { store(.int(Int64(value))) }
    func encode(_ value: UInt64) throws { store(try integer(value, at: codingPath, key: nil)) }
    func encode(_ value: UInt128) throws { store(try integer(value, at: codingPath, key: nil)) }

    func encode<T: Encodable>(_ value: T) throws {
        if T.self == DocumentID.self, isDocumentRoot {
            context.noteDocumentID(same(value, as: DocumentID.self))
            return
        }
        store(try box(value, at: codingPath, key: nil))
    }
}
