import Foundation

/// The content of one blob or attachment travelling with a revision: a file of the sending
/// database's blob store (read when sent; in process it is copied in chunks), or bytes that
/// arrived inline (base64 in CouchDB JSON).
enum AttachmentContent: Sendable {
    case file(path: String)
    case data(Data)

    /// The bytes, read whole (for inline base64 in JSON).
    func data() throws -> Data {
        switch self {
        case .data(let data): return data
        case .file(let path):
            let reader = try BlobReader(path: path)
            var data = Data()
            while let chunk = try reader.next() { data.append(chunk) }
            return data
        }
    }

    /// Stores the content in `store` under `digest` (verified: content that does not match its
    /// digest is refused, except a CouchDB `md5-` name of the declared `length`, see
    /// ``BlobWriter/finish(expecting:couchDBLength:)``). The digest is held until the caller
    /// releases it.
    func install(into store: BlobStore, digest: String, length: UInt64?) throws {
        let writer = try store.makeWriter(expecting: digest)
        switch self {
        case .data(let data):
            try writer.append(data)
        case .file(let path):
            try BlobReader(path: path).forEachChunk { try writer.append($0) }
        }
        _ = try writer.finish(expecting: digest, couchDBLength: length)
    }
}
