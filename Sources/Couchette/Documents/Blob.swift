import Foundation

/// Binary content — an image, a PDF, any file — kept beside a document instead of inside it.
///
/// A blob is made from data or a file and set on a document; saving the document stores the
/// content once (blobs are content-addressed: equal contents share one copy) and the document
/// body keeps only Couchbase Lite's blob dictionary
/// (`{"@type": "blob", "digest": "sha1-…", "length": …, "content_type": …}`). Reading the content
/// touches the database's store, so it is `async`; ``contentStream()`` reads it in chunks with
/// bounded memory, however large it is.
///
/// ```swift
/// let photo = try Blob(contentType: "image/jpeg", fileURL: URL(fileURLWithPath: "/tmp/cat.jpg"))
/// try await photos.save(document: MutableDocument(id: "cat").setBlob(photo, forKey: "image"))
///
/// let stored = try await photos.document(id: "cat")?.blob(forKey: "image")
/// for try await chunk in stored!.contentStream() { output.write(chunk) }
/// ```
///
/// Two blobs are equal when their digests are (for a blob not saved yet: only to itself). A blob
/// read from a document finds its content in whichever open database holds that digest; once
/// none does (the database was closed, or compaction removed content no revision references),
/// reading it throws `.notFound`.
public final class Blob: Sendable, Hashable, Codable {
    /// Where the content of a blob comes from before it is saved.
    enum Source: Sendable {
        case data(Data)
        case file(URL)
        case stored
    }

    /// The MIME type given when the blob was made, such as `"image/jpeg"`.
    public let contentType: String
    /// The content's size in bytes.
    public let length: UInt64
    let source: Source
    /// CouchDB's `revpos` from the stored dictionary this blob was read from: kept when the blob
    /// is written back, so an unchanged blob is not sent to peers again.
    let revisionPosition: Int64?
    /// The digest (once saved) and the store that holds the content (when known).
    private let state: Locked<(digest: String?, store: BlobStore?)>

    /// A blob holding `data` (kept in memory until the blob is saved).
    public init(contentType: String, data: Data) {
        self.contentType = contentType
        self.length = UInt64(data.count)
        self.source = .data(data)
        self.revisionPosition = nil
        self.state = Locked((nil, nil))
    }

    /// A blob holding the content of the file at `fileURL`. Nothing is read now: saving streams
    /// the file into the database in chunks, so a file of any size costs bounded memory.
    /// - Throws: `.notFound` when the file does not exist, `.invalidParameter` when it is not a
    ///   regular file.
    public init(contentType: String, fileURL: URL) throws {
        var status = stat()
        guard stat(fileURL.path, &status) == 0 else {
            throw CouchetteError(.notFound, "cannot read blob file \(fileURL.path): \(String(cString: strerror(errno)))")
        }
        guard (status.st_mode & S_IFMT) == S_IFREG else {
            throw CouchetteError(.invalidParameter, "blob file \(fileURL.path) is not a regular file")
        }
        self.contentType = contentType
        self.length = UInt64(status.st_size)
        self.source = .file(fileURL)
        self.revisionPosition = nil
        self.state = Locked((nil, nil))
    }

    /// A blob described by a stored blob dictionary (content in `store`, or found by digest).
    init(contentType: String, length: UInt64, digest: String, store: BlobStore?, revisionPosition: Int64? = nil) {
        self.contentType = contentType
        self.length = length
        self.source = .stored
        self.revisionPosition = revisionPosition
        self.state = Locked((digest, store))
    }

    /// The blob a stored dictionary describes, or nil when it is not a blob dictionary.
    convenience init?(properties: [String: Any], store: BlobStore? = nil) {
        guard Blob.isBlob(properties: properties) || Blob.isAttachment(properties: properties),
            let digest = properties[Key.digest] as? String, let length = Blob.length(properties[Key.length])
        else { return nil }
        self.init(
            contentType: properties[Key.contentType] as? String ?? Blob.defaultContentType,
            length: length, digest: digest, store: store, revisionPosition: (properties[Key.revpos] as? Int).map(Int64.init))
    }

    enum Key {
        static let type = "@type"
        static let digest = "digest"
        static let length = "length"
        static let contentType = "content_type"
        static let revpos = "revpos"
    }
    static let typeName = "blob"
    static let defaultContentType = "application/octet-stream"

    /// The content's digest, `"sha1-<base64>"` (or CouchDB's `"md5-<base64>"` for an attachment
    /// pulled from CouchDB); nil until the blob is saved, then set on this object.
    public var digest: String? { state.withLock { $0.digest } }

    var store: BlobStore? { state.withLock { $0.store } }

    /// Couchbase Lite's blob dictionary: `@type`, `content_type`, `length` and (once saved) `digest`.
    public var properties: [String: Any] {
        var properties: [String: Any] = [Key.type: Blob.typeName, Key.contentType: contentType, Key.length: Int(clamping: length)]
        if let digest { properties[Key.digest] = digest }
        return properties
    }

    /// ``properties`` as a stored value.
    var value: Value {
        var entries: [String: Value] = [
            Key.type: .string(Blob.typeName), Key.contentType: .string(contentType),
            Key.length: .int(Int64(clamping: length)),
        ]
        if let digest { entries[Key.digest] = .string(digest) }
        return .dictionary(entries)
    }

    /// The dictionary stored in a document body: ``value`` plus `revpos` (this blob's own, else
    /// `revisionPosition`, the generation of the revision being written).
    func storedValue(revisionPosition current: Int64?) -> Value {
        guard case .dictionary(var entries) = value, let position = revisionPosition ?? current else { return value }
        entries[Key.revpos] = .int(position)
        return .dictionary(entries)
    }

    /// ``properties`` as compact JSON.
    public func toJSON() -> String { JSON.string(from: value) }

    /// True when `properties` is a blob dictionary: `"@type": "blob"` and a string `digest`.
    ///
    /// ```swift
    /// if let image = doc.dictionary(forKey: "image"), Blob.isBlob(properties: image.toDictionary()) { … }
    /// ```
    public static func isBlob(properties: [String: Any]) -> Bool {
        properties[Key.type] as? String == typeName && properties[Key.digest] is String
    }

    /// True for an entry of CouchDB's `_attachments`: a `digest` and no `@type` of another kind.
    static func isAttachment(properties: [String: Any]) -> Bool {
        properties[Key.type] == nil && properties[Key.digest] is String && properties["revpos"] != nil
    }

    private static func length(_ any: Any?) -> UInt64? {
        switch any {
        case let number as Int: number >= 0 ? UInt64(number) : nil
        case let number as Int64: number >= 0 ? UInt64(number) : nil
        case let number as Double: number >= 0 && number <= 9.0e15 && number == number.rounded() ? UInt64(number) : nil
        default: nil
        }
    }

    // MARK: - Saving

    /// Stores the content in `store` (once), sets the digest and binds the blob to `store`.
    /// Returns the digest, held in `store` until the caller releases it (after the commit that
    /// references it). A blob whose content `store` already has costs nothing.
    func install(into store: BlobStore) throws -> String {
        let digest = self.digest
        if let digest, store.path(for: digest) != nil {
            store.hold([digest])
            if store.contains(digest) {
                state.withLock { $0.store = $0.store ?? store }
                return digest
            }
            store.release([digest])
        }
        let stored: BlobWriter.Stored
        switch source {
        case .data(let data): stored = try store.write(data)
        case .file(let url): stored = try store.write(contentsOf: url)
        case .stored:
            guard let digest else { throw CouchetteError(.invalidParameter, "blob has no digest") }
            // Read from another database (or gone from this one): copy what an open store holds.
            let reader = try openReader()
            let writer = try store.makeWriter(expecting: digest, contentType: contentType)
            try reader.forEachChunk { try writer.append($0) }
            stored = try writer.finish(expecting: digest)
        }
        guard stored.length == length else {
            store.release([stored.digest])
            throw CouchetteError(.invalidParameter, "blob content changed while it was saved: \(stored.length) bytes, expected \(length)")
        }
        state.withLock { $0 = (stored.digest, store) }
        return stored.digest
    }

    // MARK: - Reading

    /// The whole content. For large blobs prefer ``contentStream()``, which never holds it whole.
    ///
    /// ```swift
    /// let data = try await doc.blob(forKey: "avatar")?.content()
    /// ```
    /// - Throws: `.notFound` when no open database holds the content, `.io` on file errors.
    public func content() async throws -> Data {
        if case .data(let data) = source { return data }
        let reader = try openReader()
        var data = Data()
        data.reserveCapacity(Int(clamping: length))
        while let chunk = try reader.next() { data.append(chunk) }
        return data
    }

    /// The content as a sequence of `Data` chunks (256 KiB each), read as the loop asks for them.
    ///
    /// ```swift
    /// for try await chunk in blob.contentStream() { try handle.write(contentsOf: chunk) }
    /// ```
    public func contentStream() -> BlobContentStream { BlobContentStream(blob: self) }

    /// A reader of the content: the stored file, or the file this blob was made from.
    func openReader() throws -> BlobReader {
        if let digest {
            if let store, store.contains(digest), let path = store.path(for: digest) { return try BlobReader(path: path) }
            if let path = BlobStore.openStore(holding: digest)?.path(for: digest) { return try BlobReader(path: path) }
        }
        if case .file(let url) = source { return try BlobReader(path: url.path) }
        throw CouchetteError(.notFound, "no open database holds the content of blob \(digest ?? "(unsaved)")")
    }

    // MARK: - Equality and Codable

    /// Blobs are equal when their digests are, that is when their contents are the same bytes; an
    /// unsaved blob (no digest yet) equals only itself.
    public static func == (lhs: Blob, rhs: Blob) -> Bool {
        if lhs === rhs { return true }
        guard let left = lhs.digest, let right = rhs.digest else { return false }
        return left == right
    }

    /// Hashes the digest, consistent with `==` (an unsaved blob hashes its identity).
    public func hash(into hasher: inout Hasher) {
        if let digest { hasher.combine(digest) } else { hasher.combine(ObjectIdentifier(self)) }
    }

    private enum CodingKeys: String, CodingKey {
        case type = "@type", digest, length, contentType = "content_type"
    }

    /// Reads a blob dictionary (`@type: "blob"`, `digest`, `length`, `content_type`), as a document
    /// model's `Blob` property does; anything else throws `DecodingError.dataCorrupted`.
    public convenience init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        guard try container.decodeIfPresent(String.self, forKey: .type) == Blob.typeName else {
            throw DecodingError.dataCorruptedError(
                forKey: .type, in: container, debugDescription: "not a blob dictionary (\"@type\" is not \"blob\")")
        }
        let length = try container.decode(UInt64.self, forKey: .length)
        let digest = try container.decode(String.self, forKey: .digest)
        let type = try container.decodeIfPresent(String.self, forKey: .contentType) ?? Blob.defaultContentType
        self.init(contentType: type, length: length, digest: digest, store: nil)
    }

    /// Writes the blob dictionary. A document model's blobs are saved with it (their digest is
    /// known then); any other encoder needs a saved blob (see ``Database/saveBlob(blob:)``).
    public func encode(to encoder: any Encoder) throws {
        guard let digest else {
            throw EncodingError.invalidValue(
                self,
                EncodingError.Context(
                    codingPath: encoder.codingPath,
                    debugDescription: "a Blob must be saved before it is encoded outside a document (use Database.saveBlob(blob:))"))
        }
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(Blob.typeName, forKey: .type)
        try container.encode(contentType, forKey: .contentType)
        try container.encode(digest, forKey: .digest)
        try container.encode(length, forKey: .length)
    }
}

extension Blob: ValueConvertible {
    /// A saved blob converts to its blob dictionary; an unsaved one cannot be stored outside a
    /// document's setBlob (there is no content to reference yet).
    func toValue() -> ValueConversion.Converted {
        guard digest != nil else {
            return .unsupported("a Blob must be saved (with setBlob on a document, or Database.saveBlob) before it is used here")
        }
        return .value(value)
    }
}

extension Blob: CustomStringConvertible {
    /// The content type, length and digest (or "unsaved"), for logs; never the content.
    public var description: String { "Blob(\(contentType), \(length) bytes, \(digest ?? "unsaved"))" }
}
