import Foundation

/// Reads one revision sent as `multipart/related`, the way CouchDB's replicator PUTs documents
/// with attachments and answers `open_revs` with `attachments=true`: a JSON part (the document,
/// its `_attachments` entries marked `"follows": true`), then one part per following attachment,
/// matched by its `Content-Disposition` file name or else in the order the JSON names them.
///
/// Each attachment's content streams as it arrives, decoded first when the part is gzip
/// (`Content-Encoding: gzip` or the entry's `"encoding": "gzip"`), and is checked against the
/// entry's length (CouchDB's "attachment shorter/longer than expected") and its digest — the MD5
/// of the bytes as they arrived, gzip-encoded ones included, as CouchDB checks it (or the
/// SHA-1/MD5 of the decoded content). It goes either into a
/// ``BlobWriter`` of a store (the listener: the digest is checked there and held, see
/// ``BlobStore/hold(_:)``, until the caller releases ``held``), or into ``StagedFile``s in a
/// directory (a pulling replicator: the revision then carries them, checked when stored).
/// Memory stays at the JSON part plus a chunk, whatever the attachments' size.
///
/// ```swift
/// let reader = try MultipartDocumentReader(store: blobs)
/// var parts = try MultipartReader(contentType: contentType)
/// for event in try parts.feed(body) { try reader.handle(event) }
/// try parts.finish()
/// let revision = try reader.revision()
/// ```
final class MultipartDocumentReader {
    /// One `"follows": true` entry of the JSON part.
    private struct Following {
        let name: String
        let digest: String
        let contentType: String?
        let length: UInt64?
        let encodedLength: UInt64?
        let gzip: Bool
    }

    /// Where content goes.
    enum Destination {
        case store(BlobStore)
        case staging(directory: String)
    }

    private enum Sink {
        case blob(BlobWriter)
        case staged(StagedFile.Writer)

        func append(_ data: Data) throws {
            switch self {
            case .blob(let writer): try writer.append(data)
            case .staged(let writer): try writer.append(data)
            }
        }

        func abandon() {
            switch self {
            case .blob(let writer): writer.abandon()
            case .staged(let writer): writer.abandon()
            }
        }
    }

    /// The attachment part being read.
    private struct Current {
        let entry: Following
        let sink: Sink
        let decoder: GzipDecoder?
        /// The MD5 of gzip-encoded bytes as they arrive: CouchDB names such content by it.
        let encodedDigest: ContentDigest?
        var received: UInt64 = 0
    }

    private let destination: Destination
    private let maximumJSONBytes: Int
    private var json: [UInt8]?
    private var readingJSON = false
    private var document: Value?
    private var waiting: [Following] = []
    private var current: Current?
    /// Digests stored and held for the caller (``Destination/store(_:)``).
    private(set) var held: [String] = []
    /// Content received into staged files, by digest (``Destination/staging(directory:)``).
    private var staged: [String: AttachmentContent] = [:]

    init(_ destination: Destination, maximumJSONBytes: Int = 64 << 20) {
        self.destination = destination
        self.maximumJSONBytes = maximumJSONBytes
    }

    convenience init(store: BlobStore, maximumJSONBytes: Int = 64 << 20) {
        self.init(.store(store), maximumJSONBytes: maximumJSONBytes)
    }

    deinit {
        releaseHeld()
    }

    /// Releases the held digests now (after the revision committed, or was refused).
    func releaseHeld() {
        if case .store(let store) = destination { store.release(held) }
        held = []
    }

    /// Takes the next event of the `multipart/related` body.
    /// - Throws: `.invalidParameter` for a JSON part that is not a document, an attachment part
    ///   nobody announced, or content that does not match its entry; `.io` from the store.
    func handle(_ event: MultipartReader.Event) throws {
        switch event {
        case .part(let headers):
            guard document != nil else {
                guard json == nil else { throw CouchetteError(.invalidParameter, "multipart document has a second JSON part") }
                json = []
                readingJSON = true
                return
            }
            try startAttachment(headers)
        case .data(let chunk):
            if readingJSON {
                json!.append(contentsOf: chunk)
                guard json!.count <= maximumJSONBytes else {
                    throw CouchetteError(.invalidParameter, "multipart document's JSON part is larger than \(maximumJSONBytes) bytes")
                }
            } else if current != nil {
                try appendAttachment(chunk)
            } else {
                throw CouchetteError(.invalidParameter, "multipart document has content outside any part")
            }
        case .partEnd:
            if readingJSON {
                readingJSON = false
                try readJSON()
            } else if current != nil {
                try finishAttachment()
            }
        case .end:
            break
        }
    }

    /// The revision the body carried, once every part was read; its attachments are stored (and
    /// held), so it travels with stubs only.
    /// - Throws: `.invalidParameter` when a following attachment never came ("attachment shorter
    ///   than expected", as CouchDB says) or the JSON part is missing.
    /// - Parameter object: the document as the caller completed it (an id from the URL), else
    ///   the JSON part as sent.
    func revision(object: Value? = nil) throws -> PeerRevision {
        guard let document = object ?? document else { throw CouchetteError(.invalidParameter, "multipart document has no JSON part") }
        if let missing = waiting.first {
            throw CouchetteError(.invalidParameter, "attachment shorter than expected: '\(missing.name)' has no part in the multipart body")
        }
        var revision = try CouchDBDocument.revision(from: document)
        revision.attachments.merge(staged) { inline, _ in inline }
        return revision
    }

    /// The document's JSON as sent (with its `_attachments` entries), once the JSON part is read.
    var documentJSON: Value? { document }

    // MARK: - Parts

    private func readJSON() throws {
        let text = String(decoding: json ?? [], as: UTF8.self)
        json = nil
        let parsed: Value
        do {
            parsed = try JSON.parse(text)
        } catch let error as CouchetteError {
            throw CouchetteError(.invalidParameter, "multipart document's JSON part: \(error.message)")
        }
        guard case .dictionary(let object) = parsed else {
            throw CouchetteError(.invalidParameter, "multipart document's JSON part is not an object")
        }
        document = parsed
        guard case .dictionary(let attachments)? = object["_attachments"] else { return }
        let id = object["_id"].flatMap { if case .string(let id) = $0 { id } else { nil } } ?? "?"
        var following: [Following] = []
        for (name, entry) in attachments where entry["follows"]?.asBool == true {
            guard case .string(let digest)? = entry[Blob.Key.digest], BlobStore.isValidDigest(digest) else {
                throw CouchetteError(.invalidParameter, "document '\(id)': following attachment '\(name)' has no usable digest")
            }
            following.append(
                Following(
                    name: name, digest: digest,
                    contentType: entry[Blob.Key.contentType].flatMap { if case .string(let type) = $0 { type } else { nil } },
                    length: Self.count(entry[Blob.Key.length]),
                    encodedLength: Self.count(entry["encoded_length"]),
                    gzip: entry["encoding"] == .string("gzip")))
        }
        // Parts without a file name come in the order the JSON text lists the entries.
        func position(_ name: String) -> Int {
            let quoted = JSON.string(from: .string(name))
            return text.range(of: quoted).map { text.distance(from: text.startIndex, to: $0.lowerBound) } ?? Int.max
        }
        waiting = following.sorted { position($0.name) < position($1.name) }
    }

    private static func count(_ value: Value?) -> UInt64? {
        if case .int(let number)? = value, number >= 0 { return UInt64(number) }
        return nil
    }

    private func startAttachment(_ headers: [String: String]) throws {
        let index: Int
        if let name = Self.fileName(headers["content-disposition"]), let found = waiting.firstIndex(where: { $0.name == name }) {
            index = found
        } else if !waiting.isEmpty {
            index = 0
        } else {
            throw CouchetteError(.invalidParameter, "multipart document has an attachment part its JSON does not announce")
        }
        let entry = waiting.remove(at: index)
        let gzip = entry.gzip || headers["content-encoding"]?.lowercased() == "gzip"
        let sink: Sink =
            switch destination {
            case .store(let store): .blob(try store.makeWriter(expecting: entry.digest, contentType: entry.contentType))
            case .staging(let directory): .staged(try StagedFile.Writer(directory: directory))
            }
        current = Current(
            entry: entry, sink: sink, decoder: gzip ? try GzipDecoder(maximumOutput: entry.length ?? UInt64.max) : nil,
            encodedDigest: gzip ? try ContentDigest() : nil)
    }

    /// `attachment; filename="one.txt"` → `one.txt`.
    private static func fileName(_ disposition: String?) -> String? {
        guard let disposition, let range = disposition.range(of: "filename=") else { return nil }
        var name = disposition[range.upperBound...].trimmingCharacters(in: .whitespaces)
        if name.hasPrefix("\"") {
            name.removeFirst()
            guard let close = name.firstIndex(of: "\"") else { return nil }
            name = String(name[..<close])
        } else if let end = name.firstIndex(of: ";") {
            name = String(name[..<end])
        }
        return name
    }

    private func appendAttachment(_ chunk: Data) throws {
        guard var part = current else { return }
        part.received += UInt64(chunk.count)
        current = part
        let limit = part.decoder == nil ? part.entry.length : (part.entry.encodedLength ?? part.entry.length.map { $0 + $0 / 2 + 1024 })
        if let limit, part.received > limit {
            throw CouchetteError(.invalidParameter, "attachment longer than expected: '\(part.entry.name)' has more than \(limit) bytes")
        }
        if let decoder = part.decoder {
            chunk.withUnsafeBytes { part.encodedDigest?.update($0) }
            try decoder.decode(chunk) { try part.sink.append($0) }
        } else {
            try part.sink.append(chunk)
        }
    }

    private func finishAttachment() throws {
        guard let part = current else { return }
        current = nil
        if let decoder = part.decoder { try decoder.finish() }
        let expected = part.decoder == nil ? part.entry.length : part.entry.encodedLength
        if let expected, part.received < expected {
            part.sink.abandon()
            throw CouchetteError(
                .invalidParameter, "attachment shorter than expected: '\(part.entry.name)' has \(part.received) of \(expected) bytes")
        }
        let length: UInt64
        let encodedMD5 = part.encodedDigest?.finish().md5
        switch part.sink {
        case .blob(let writer):
            let stored: BlobWriter.Stored
            do {
                stored = try writer.finish(expecting: part.entry.digest, encodedMD5: encodedMD5)
            } catch let error as CouchetteError where BlobWriter.isDigestMismatch(error) {
                throw CouchetteError(error.code, "attachment '\(part.entry.name)': \(error.message)")
            }
            held.append(stored.digest)
            length = stored.length
        case .staged(let writer):
            // Checked when stored (``AttachmentContent/install``), by this MD5 if it arrived gzip-encoded.
            length = writer.length
            staged[part.entry.digest] = .staged(try writer.finish(encodedMD5: encodedMD5))
        }
        if let declared = part.entry.length, length != declared {
            throw CouchetteError(
                .invalidParameter, "attachment '\(part.entry.name)' decodes to \(length) bytes, not the \(declared) its entry declares"
            )
        }
    }
}
