import Foundation

/// A document being edited: create one, set properties, and save it to a collection.
///
/// `MutableDocument` is not `Sendable`; it belongs to the task that edits it. It remembers the
/// revision it was read at, which is what concurrency control compares against when you save.
///
/// ```swift
/// let doc = MutableDocument(id: "task-1")
///     .setString("Buy milk", forKey: "title")
///     .setBoolean(false, forKey: "completed")
/// try await collection.save(document: doc)
/// print(doc.revisionID!)   // "1-…"
/// ```
public final class MutableDocument: DictionaryProtocol {
    /// The document's id; generated (random, URL-safe) when none is given.
    public let id: String
    /// The revision this document was read at or last saved as; nil for a new document.
    public internal(set) var revisionID: String? {
        get { revision?.text }
        set { revision = newValue.map(StoredRevisionID.text) }
    }
    /// ``revisionID`` as the record it was read from stores it: formatted as text only when
    /// asked for, since an edit saved without concurrency control never needs it.
    var revision: StoredRevisionID? {
        get {
            settleBatchWrite()
            return savedRevision
        }
        set {
            settleBatchWrite()
            savedRevision = newValue
        }
    }
    /// The sequence of the revision this document was read at or last saved as.
    public internal(set) var sequence: UInt64 {
        get {
            settleBatchWrite()
            return savedSequence
        }
        set {
            settleBatchWrite()
            savedSequence = newValue
        }
    }
    /// ``revision`` and ``sequence`` as last set: a write in a batch that committed since is
    /// taken into them by ``settleBatchWrite()`` when they are next read.
    private var savedRevision: StoredRevisionID?
    private var savedSequence: UInt64
    let root: MutableDictionaryObject
    /// The batch this document was last saved in and its write there, which a batch does not
    /// hold on to (see ``BatchRevisions``): the document asks it for its new revision.
    private var batchWrite: BatchWrite?

    /// A new, empty document. With no id, a unique one is generated.
    public init(id: String? = nil) {
        self.id = id ?? DocumentIDGenerator.make()
        self.savedRevision = nil
        self.savedSequence = 0
        self.root = MutableDictionaryObject(capacity: 8)
    }

    /// A new document holding `data`.
    public convenience init(id: String?, data: [String: Any]) {
        self.init(id: id)
        root.setData(data)
    }

    /// A new document whose properties come from a JSON object.
    /// - Throws: `.invalidParameter` when `json` is not valid JSON or not an object.
    public convenience init(id: String?, json: String) throws {
        let id = id ?? DocumentIDGenerator.make()
        // Straight onto the transcoded bytes: no empty dictionary made first and replaced.
        let body = try Self.properties(fromJSON: json, id: id)
        self.init(id: id, revision: nil, sequence: 0, root: MutableDictionaryObject(encoded: body))
    }

    init(id: String, revision: StoredRevisionID?, sequence: UInt64, root: MutableDictionaryObject) {
        self.id = id
        self.savedRevision = revision
        self.savedSequence = sequence
        self.root = root
    }

    // MARK: - Reading

    public var count: Int { root.count }
    public var keys: [String] { root.keys }
    public func value(forKey key: String) -> Any? { root.value(forKey: key) }
    /// The property as an editable array: changes made through it are saved with the document. Nil
    /// when missing or not an array.
    public func array(forKey key: String) -> MutableArrayObject? { root.array(forKey: key) }
    /// The property as an editable dictionary: changes made through it are saved with the document.
    /// Nil when missing or not a dictionary.
    public func dictionary(forKey key: String) -> MutableDictionaryObject? { root.dictionary(forKey: key) }
    /// A fragment that reads and sets along a path: `doc["address"]["city"].string = "Lyon"`.
    public subscript(key: String) -> MutableFragment { root[key] }
    public func toDictionary() -> [String: Any] { root.toDictionary() }

    /// An independent mutable copy (same id and revision).
    public func toMutable() -> MutableDocument {
        MutableDocument(id: id, revision: revision, sequence: sequence, root: root.copy())
    }

    // MARK: - Writing

    /// Stores `value` under `key`: strings, numbers, booleans, dates (as ISO-8601 strings),
    /// `nil`/`NSNull` (JSON null), arrays, dictionaries and Couchette's container objects. A value
    /// that cannot be stored (NaN, an unsupported type) is kept and makes the next save throw
    /// `.invalidParameter` naming its key path.
    @discardableResult public func setValue(_ value: Any?, forKey key: String) -> Self { root.setValue(value, forKey: key); return self }
    /// Stores a string; nil stores JSON null.
    @discardableResult public func setString(_ value: String?, forKey key: String) -> Self {
        root.setString(value, forKey: key); return self
    }
    /// Stores an integer (kept as an integer: `1` never becomes `1.0`).
    @discardableResult public func setInt(_ value: Int, forKey key: String) -> Self { root.setInt(value, forKey: key); return self }
    /// Stores a 64-bit integer.
    @discardableResult public func setInt64(_ value: Int64, forKey key: String) -> Self { root.setInt64(value, forKey: key); return self }
    /// Stores a double (kept as a double: `1.0` is written back as `1.0`); NaN and infinities make
    /// the next save throw.
    @discardableResult public func setDouble(_ value: Double, forKey key: String) -> Self {
        root.setDouble(value, forKey: key); return self
    }
    /// Stores a float, widened to a double.
    @discardableResult public func setFloat(_ value: Float, forKey key: String) -> Self { root.setFloat(value, forKey: key); return self }
    /// Stores `true` or `false`.
    @discardableResult public func setBoolean(_ value: Bool, forKey key: String) -> Self {
        root.setBoolean(value, forKey: key); return self
    }
    /// Stores the date as an ISO-8601 string with milliseconds, in UTC.
    @discardableResult public func setDate(_ value: Date?, forKey key: String) -> Self { root.setDate(value, forKey: key); return self }
    /// Stores an array read from another document; nil stores JSON null.
    @discardableResult public func setArray(_ value: ArrayObject?, forKey key: String) -> Self { setValue(value, forKey: key) }
    /// Stores an editable array; nil stores JSON null.
    @discardableResult public func setArray(_ value: MutableArrayObject?, forKey key: String) -> Self { setValue(value, forKey: key) }
    /// Stores a dictionary read from another document; nil stores JSON null.
    @discardableResult public func setDictionary(_ value: DictionaryObject?, forKey key: String) -> Self { setValue(value, forKey: key) }
    /// Stores an editable dictionary; nil stores JSON null.
    @discardableResult public func setDictionary(_ value: MutableDictionaryObject?, forKey key: String) -> Self {
        setValue(value, forKey: key)
    }
    /// Sets a blob, at the top level (nest it with ``MutableDictionaryObject/setBlob(_:forKey:)``
    /// and ``MutableArrayObject/addBlob(_:)``). Saving the document stores the content first.
    ///
    /// ```swift
    /// let doc = MutableDocument(id: "cat").setBlob(Blob(contentType: "image/png", data: png), forKey: "image")
    /// try await photos.save(document: doc)
    /// ```
    @discardableResult public func setBlob(_ value: Blob?, forKey key: String) -> Self { root.setBlob(value, forKey: key); return self }
    /// Removes the property, so it is missing rather than null (SQL++ sees MISSING); removing a
    /// missing key does nothing.
    @discardableResult public func removeValue(forKey key: String) -> Self { root.removeValue(forKey: key); return self }

    /// Replaces every property with the contents of `data`.
    @discardableResult public func setData(_ data: [String: Any]) -> Self { root.setData(data); return self }

    /// Replaces every property with the contents of a JSON object.
    /// - Throws: `.invalidParameter` when `json` is not valid JSON or not an object.
    public func setJSON(_ json: String) throws {
        root.replaceContents(with: try Self.properties(fromJSON: json, id: id))
    }

    /// The binary form of a JSON object: the properties of the document `id`.
    private static func properties(fromJSON json: String, id: String) throws -> EncodedValue {
        let encoded = EncodedValue(bytes: try JSON.encodeBinary(json))
        guard encoded.isDictionary else {
            throw CouchetteError(.invalidParameter, "JSON for document '\(id)' must be an object")
        }
        return encoded
    }

    // MARK: - Batch writes

    /// Marks this document as saved to the collection `number` in the batch of `revisions`;
    /// returns whether it was already (a later save in the batch builds on the first one).
    func markWritten(in revisions: BatchRevisions, to number: UInt32) -> Bool {
        settleBatchWrite()  // a write in an earlier batch that committed is taken in first
        var write = batchWrite.flatMap { $0.revisions === revisions ? $0 : nil } ?? BatchWrite(revisions: revisions)
        let alreadyWritten = write.collections.insert(number)
        batchWrite = write
        return alreadyWritten
    }

    /// Records where this document's last write in its batch (``markWritten(in:to:)``) sits.
    func recordWrite(at position: BatchRevisions.Position) {
        batchWrite?.position = position
    }

    /// Takes the revision and sequence the last batch write gave this document once that batch
    /// has committed (nothing while it is open; and nothing, but forgetting it, when it failed).
    private func settleBatchWrite() {
        guard let write = batchWrite, let position = write.position else { return }
        switch write.revisions.result(at: position) {
        case .pending:
            return
        case .written(let revision, let sequence):
            savedRevision = revision
            savedSequence = sequence
        case .unchanged:
            break
        }
        batchWrite = nil
    }

    /// The body in the stored binary format, or `.invalidParameter` naming the first bad value.
    func encodeBody(lenient: Bool = false) throws -> [UInt8] {
        if let body = root.pristineBody ?? root.patchedBody { return body }
        var encoder = ValueEncoder(capacity: 256)  // a typical document's body without regrowing (the container headers go in last)
        try encode(into: &encoder, lenient: lenient)
        let body = encoder.bytes
        // A lenient body wrote null for what cannot be stored: not the document's contents.
        if !lenient { root.adopt(encoding: body) }
        return body
    }

    /// ``encodeBody(lenient:)`` with `encoder` (emptied first) when the body must be encoded: a
    /// batch encodes all its new documents with one encoder, which then allocates nothing per
    /// document but the body it returns (a copy of exactly its size, which the document keeps as
    /// its contents: see ``MutableDictionaryObject/adopt(encoding:)``).
    func encodeBody(reusing encoder: inout ValueEncoder) throws -> [UInt8] {
        if let body = root.pristineBody ?? root.patchedBody { return body }
        encoder.reset()
        try encode(into: &encoder, lenient: false)
        let body = encoder.bytes.withUnsafeBufferPointer { [UInt8]($0) }
        root.adopt(encoding: body)
        return body
    }

    /// Encodes the properties into `encoder`, or throws `.invalidParameter` naming the first bad value.
    private func encode(into encoder: inout ValueEncoder, lenient: Bool) throws {
        encoder.lenient = lenient
        let generation: Int? =
            switch revision {
            case .packed(let generation, _): Int(generation)
            case .text(let text): RevisionID.generation(of: text)
            case nil: nil
            }
        encoder.blobRevisionPosition = generation.map { Int64($0) + 1 } ?? 1
        do {
            try root.encode(into: &encoder)
        } catch let failure as EncodingFailure {
            throw CouchetteError(.invalidParameter, "document '\(id)': \(failure.couchetteError.message)")
        }
    }

}

extension MutableDocument: CustomStringConvertible {
    /// The id, the revision (or "unsaved") and the properties as JSON, for logs and debugging.
    public var description: String { "MutableDocument(\(id), \(revisionID ?? "unsaved")): \(toJSON())" }
}

/// Random, URL-safe, unique document ids: `~` and 22 base64url characters (132 random bits), the
/// shape Couchbase Lite gives generated ids.
enum DocumentIDGenerator {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")

    static func make() -> String {
        var generator = SystemRandomNumberGenerator()
        var characters: [Character] = ["~"]
        characters.reserveCapacity(23)
        for _ in 0..<22 { characters.append(alphabet[Int(generator.next() % 64)]) }
        return String(characters)
    }
}
