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
        /// The document body in the stored binary format (always a dictionary).
        let body: [UInt8]
        /// The first of the model's own `@DocumentID` wrappers met while encoding (normally the only one).
        let documentID: DocumentID?
        /// Any further ones (a mistake ``ModelWrite`` reports).
        let otherDocumentIDs: [DocumentID]
        /// The model's own `@DocumentID` wrappers met while encoding (normally exactly one).
        var documentIDs: [DocumentID] { documentID.map { [$0] + otherDocumentIDs } ?? [] }
        /// Digests of the model's blobs, stored and held in the blob store until the caller
        /// releases them after the commit.
        let heldBlobs: [String]

        /// The body decoded (for checks: saving uses ``body`` as it is).
        var properties: Value { EncodedValue(bytes: body).decode() }
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
        let streamed: [UInt8]?
        do {
            streamed = try streamedBody(model, context: context)
        } catch {
            blobs?.release(context.heldBlobs)
            throw error
        }
        if let body = streamed {
            return Output(
                body: body, documentID: context.firstDocumentID, otherDocumentIDs: context.otherDocumentIDs,
                heldBlobs: context.heldBlobs)
        }
        // A model the stream could not follow: the buffered encoder encodes it again. Blobs the
        // first pass stored stay held until the second holds them too.
        defer { blobs?.release(context.heldBlobs) }
        return try encodeBuffered(model, blobs: blobs, revisionPosition: revisionPosition)
    }

    /// The body of `model` written as its values arrive (see ``BodyStream``); nil when the buffered
    /// encoder must encode it instead.
    static func streamedBody<T: Encodable>(_ model: T, context: EncodingContext) throws -> [UInt8]? {
        let stream = BodyStream(context: context)
        let root = StreamingModelEncoder(stream: stream, position: stream.push(.encoder), codingPath: [], isDocumentRoot: true)
        do {
            try model.encode(to: root)
        } catch {
            // An error after a misuse may come from the misuse: the buffered encoder reports it.
            if stream.misused { return nil }
            if let error = error as? EncodingError { throw CouchetteError(.invalidParameter, describe(error)) }
            throw error
        }
        guard root.isDictionary else { return nil }  // the buffered encoder names the mistake
        return stream.finishedBody(root: root.position)
    }

    /// The buffered encoder: every container kept until `encode(to:)` returns, then written.
    static func encodeBuffered<T: Encodable>(
        _ model: T, blobs: BlobStore?, revisionPosition: @escaping () -> Int64?
    ) throws -> Output {
        let context = EncodingContext(blobs: blobs, revisionPosition: revisionPosition)
        do {
            let encoder = try run(model, isDocumentRoot: true, context: context)
            guard encoder.encodedADictionary else {
                throw CouchetteError(
                    .invalidParameter,
                    "\(T.self) must encode as a keyed container (a dictionary of properties), not a single value or an array")
            }
            // Straight from the containers to the binary body: no `Value` dictionary in between.
            var body = ValueEncoder(capacity: 256)  // most models' bodies fit without regrowing, headers included
            do {
                try encoder.write(into: &body)
            } catch let failure as EncodingFailure {
                throw failure.couchetteError
            }
            return Output(
                body: body.bytes, documentID: context.firstDocumentID, otherDocumentIDs: context.otherDocumentIDs,
                heldBlobs: context.heldBlobs)
        } catch {
            blobs?.release(context.heldBlobs)
            throw error
        }
    }

    /// Encodes any `Encodable` value (no document root: `@DocumentID`s are written as strings).
    static func encodeValue<T: Encodable>(_ value: T) throws -> Value {
        try run(value, isDocumentRoot: false, context: EncodingContext(blobs: nil, revisionPosition: { nil })).finishedValue()
    }

    /// The encoder `value` was encoded into, its containers filled.
    private static func run<T: Encodable>(_ value: T, isDocumentRoot: Bool, context: EncodingContext) throws -> ModelEncoder {
        let encoder = ModelEncoder(codingPath: [], context: context, isDocumentRoot: isDocumentRoot)
        do {
            try value.encode(to: encoder)
        } catch let error as EncodingError {
            throw CouchetteError(.invalidParameter, describe(error))
        }
        if let failure = context.failure { throw failure }
        return encoder
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
    /// The model's own `@DocumentID` wrappers met while encoding: almost always one, kept
    /// without an array.
    private(set) var firstDocumentID: DocumentID?
    private(set) var otherDocumentIDs: [DocumentID] = []
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
        guard let first = firstDocumentID else {
            firstDocumentID = documentID
            return
        }
        if first !== documentID && !otherDocumentIDs.contains(where: { $0 === documentID }) { otherDocumentIDs.append(documentID) }
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
        case .dictionary(let dictionary): .dictionary(try dictionary.finished())
        case .array(let array): .array(try array.elements.map { try $0.finished() })
        case .encoder(let encoder): try encoder.finishedValue()
        }
    }

    /// Writes the value in the binary format (containers only now: they may be filled until the
    /// model's `encode(to:)` returns).
    func write(into encoder: inout ValueEncoder) throws {
        switch self {
        case .value(let value): try encoder.write(value)
        case .dictionary(let dictionary): try dictionary.write(into: &encoder)
        case .array(let array):
            let elements = array.elements
            try encoder.writeArray(count: elements.count) { encoder, index in try elements[index].write(into: &encoder) }
        case .encoder(let nested): try nested.write(into: &encoder)
        }
    }
}

/// A keyed container's entries in the order they were encoded: appending costs no hashing, and
/// the stored order (keys sorted by their UTF-8 bytes) is worked out once per coding-key type.
final class PendingDictionary {
    /// Keys and values in one array: one allocation and one append per entry.
    ///
    /// Unchecked exclusivity: a container belongs to the one encoding that made it, on one
    /// thread, and no access to it outlives the method making it (nothing is passed `inout`
    /// across calls), so accesses cannot overlap; the runtime check cost more than the append.
    @exclusivity(unchecked) private(set) var entries: [(key: String, value: PendingValue)] = []
    /// The coding-key type of the entries. When two types share the container (a superclass
    /// encoding into its subclass's container), its order is not cached.
    private let keyType: ObjectIdentifier
    private var keyTypeIsMixed = false

    init(keyType: ObjectIdentifier) {
        self.keyType = keyType
        // Models have a handful of properties: room for them without regrowing.
        entries.reserveCapacity(8)
    }

    /// The container was asked for again, perhaps with another coding-key type.
    func share(keyType other: ObjectIdentifier) {
        if keyType != other { keyTypeIsMixed = true }
    }

    func set(_ value: PendingValue, forKey key: String) {
        entries.append((key, value))
    }

    /// The entries in stored order, each key once (the last value encoded under it wins).
    private func storedOrder() -> KeyOrder {
        guard !keyTypeIsMixed else { return KeyOrder(arrival: entries.map(\.key)) }
        if let cached = KeyOrder.cache.withLock({ $0[keyType] }), cached.arrival.elementsEqual(entries, by: { $0 == $1.key }) {
            return cached
        }
        let order = KeyOrder(arrival: entries.map(\.key))
        KeyOrder.cache.withLock { $0[keyType] = order }
        return order
    }

    func write(into encoder: inout ValueEncoder) throws {
        let order = storedOrder()
        let entries = self.entries
        try encoder.writeDictionary(sortedKeys: order.sorted) { encoder, index in
            try entries[order.positions[index]].value.write(into: &encoder)
        }
    }

    func finished() throws -> [String: Value] {
        var result: [String: Value] = [:]
        result.reserveCapacity(entries.count)
        for (key, value) in entries { result[key] = try value.finished() }
        return result
    }
}

/// How the keys of a keyed container arrived and where each stored entry comes from: a model's
/// `encode(to:)` encodes the same keys in the same order every time, so this is computed once per
/// coding-key type (``cache``) and only compared afterwards.
struct KeyOrder: Sendable {
    /// The keys in the order they were encoded.
    let arrival: [String]
    /// The distinct keys in stored order.
    let sorted: [String]
    /// For each of ``sorted``, the position in ``arrival`` of its last occurrence.
    let positions: [Int]

    init(arrival: [String]) {
        self.arrival = arrival
        // Stable by position, so that the last of equal keys is the one kept.
        let order = arrival.indices.sorted { left, right in
            let a = arrival[left].utf8, b = arrival[right].utf8
            if a.elementsEqual(b) { return left < right }
            return a.lexicographicallyPrecedes(b)
        }
        var sorted: [String] = []
        var positions: [Int] = []
        sorted.reserveCapacity(order.count)
        positions.reserveCapacity(order.count)
        for (index, position) in order.enumerated() {
            if index + 1 < order.count, arrival[order[index + 1]] == arrival[position] { continue }
            sorted.append(arrival[position])
            positions.append(position)
        }
        self.sorted = sorted
        self.positions = positions
    }

    /// The last order seen per coding-key type.
    static let cache = Locked<[ObjectIdentifier: KeyOrder]>([:])
}

final class PendingArray {
    var elements: [PendingValue] = []
}

/// The `Encoder` handed to `encode(to:)`; also its own single-value container.
final class ModelEncoder: Encoder, DocumentModelEncoder {
    let codingPath: [any CodingKey]
    let context: EncodingContext
    /// True for the encoder of the model itself and the super-encoders it hands out: a
    /// `@DocumentID` met here is the document's id and is not written.
    let isDocumentRoot: Bool
    var userInfo: [CodingUserInfoKey: Any] { [:] }
    /// Unchecked exclusivity, as ``PendingDictionary/entries``: one encoding's, on one thread.
    @exclusivity(unchecked) private var storage: PendingValue?

    init(codingPath: [any CodingKey], context: EncodingContext, isDocumentRoot: Bool) {
        self.codingPath = codingPath
        self.context = context
        self.isDocumentRoot = isDocumentRoot
    }

    /// What was encoded; an encoder that encoded nothing gives an empty dictionary.
    func finishedValue() throws -> Value {
        try storage?.finished() ?? .dictionary([:])
    }

    /// Whether what was encoded is a dictionary (or nothing, which is an empty one).
    var encodedADictionary: Bool {
        switch storage {
        case nil, .dictionary?: true
        case .encoder(let nested)?: nested.encodedADictionary
        case .value?, .array?: false
        }
    }

    /// Writes what was encoded in the binary format; an encoder that encoded nothing writes an
    /// empty dictionary.
    func write(into encoder: inout ValueEncoder) throws {
        guard let storage else { return try encoder.write(.dictionary([:])) }
        try storage.write(into: &encoder)
    }

    // MARK: - Containers

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        let dictionary: PendingDictionary
        if case .dictionary(let existing)? = storage {
            dictionary = existing  // asked again (a superclass sharing its subclass's encoder)
            dictionary.share(keyType: ObjectIdentifier(Key.self))
        } else {
            if storage != nil { mixedContainers("a keyed container") }
            dictionary = PendingDictionary(keyType: ObjectIdentifier(Key.self))
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
    /// Nested models and containers stay containers until the whole model is written, so their
    /// entries go straight to the binary body too.
    func box<T: Encodable>(_ value: T, at path: [any CodingKey], key: (any CodingKey)?) throws -> PendingValue {
        if let leaf = try context.leaf(value, at: path, key: key) { return .value(leaf) }
        try EncodingContext.checkNesting(T.self, at: path, key: key)
        let child = ModelEncoder(codingPath: key.map { path + [$0] } ?? path, context: context, isDocumentRoot: false)
        try value.encode(to: child)
        return .encoder(child)
    }
}

// MARK: - Single value container

extension ModelEncoder: SingleValueEncodingContainer {
    private func store(_ value: Value) { store(pending: .value(value)) }

    private func store(pending value: PendingValue) {
        if storage != nil {
            context.fail("\(CodingPath.describe(codingPath)): encode(to:) encoded two values into one single-value container")
        }
        storage = value
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
    func encode(_ value: Int128) throws { store(try context.integer(value, at: codingPath, key: nil)) }
    func encode(_ value: UInt) throws { store(try context.integer(value, at: codingPath, key: nil)) }
    func encode(_ value: UInt8) throws { store(.int(Int64(value))) }
    func encode(_ value: UInt16) throws { store(.int(Int64(value))) }
    func encode(_ value: UInt32) throws { store(.int(Int64(value))) }
    func encode(_ value: UInt64) throws { store(try context.integer(value, at: codingPath, key: nil)) }
    func encode(_ value: UInt128) throws { store(try context.integer(value, at: codingPath, key: nil)) }

    func encode<T: Encodable>(_ value: T) throws {
        if T.self == DocumentID.self, isDocumentRoot {
            context.noteDocumentID(same(value, as: DocumentID.self))
            return
        }
        store(pending: try box(value, at: codingPath, key: nil))
    }
}
