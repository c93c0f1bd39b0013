import Foundation

/// The content of one blob or attachment travelling with a revision: a file of the sending
/// database's blob store (read when sent; in process it is copied in chunks), bytes that
/// arrived inline (base64 in CouchDB JSON), or a part of a multipart body received into a
/// temporary file.
enum AttachmentContent: Sendable {
    case file(path: String)
    case data(Data)
    case staged(StagedFile)

    /// The file holding the content (empty for content in memory, which never asks).
    private var filePath: String {
        switch self {
        case .file(let path): path
        case .staged(let file): file.path
        case .data: ""
        }
    }

    /// The content's length in bytes; nil when a file cannot be read.
    var length: UInt64? {
        switch self {
        case .data(let data): return UInt64(data.count)
        case .file, .staged:
            let path = filePath
            var status = stat()
            guard stat(path, &status) == 0 else { return nil }
            return UInt64(status.st_size)
        }
    }

    /// Calls `body` with the content in chunks of at most ``BlobStore/chunkSize`` bytes.
    func forEachChunk(_ body: (Data) async throws -> Void) async throws {
        switch self {
        case .data(let data):
            var offset = 0
            while offset < data.count {
                let end = min(offset + BlobStore.chunkSize, data.count)
                try await body(data[offset..<end])
                offset = end
            }
        case .file, .staged:
            let path = filePath
            let reader = try BlobReader(path: path)
            while let chunk = try reader.next() { try await body(chunk) }
        }
    }

    /// The bytes, read whole (for inline base64 in JSON).
    func data() throws -> Data {
        switch self {
        case .data(let data): return data
        case .file, .staged:
            let path = filePath
            let reader = try BlobReader(path: path)
            var data = Data()
            while let chunk = try reader.next() { data.append(chunk) }
            return data
        }
    }

    /// Stores the content in `store` under `digest`, verified: content that does not match its
    /// digest is refused and not kept (see ``BlobWriter/finish(expecting:encodedMD5:)``; staged
    /// content that arrived gzip-encoded also matches by the MD5 of those bytes, content of a
    /// type CouchDB compresses (`contentType`) by CouchDB's name for it compressed). The digest
    /// is held until the caller releases it.
    func install(into store: BlobStore, digest: String, contentType: String?) throws {
        let writer = try store.makeWriter(expecting: digest, contentType: contentType)
        switch self {
        case .data(let data):
            try writer.append(data)
        case .file, .staged:
            let path = filePath
            try BlobReader(path: path).forEachChunk { try writer.append($0) }
        }
        let encodedMD5: String? = if case .staged(let file) = self { file.encodedMD5 } else { nil }
        _ = try writer.finish(expecting: digest, encodedMD5: encodedMD5)
    }
}

/// Content announced `"follows": true` in the JSON part of a multipart body, sent as the part
/// after it (see ``CouchDBDocument/multipartJSON(_:includeHistory:)``).
struct FollowingAttachment: Sendable {
    let name: String
    let contentType: String
    let length: UInt64
    let content: AttachmentContent
}
