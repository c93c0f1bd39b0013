import Foundation

/// `GET|HEAD /{db}/{docid}/{attachment}`: the content of an `_attachments` entry, or of a blob
/// property under its `blob_/<JSON pointer>` name, streamed from the blob store in chunks.
extension ListenerRouter {
    /// The attachment response for a path of more than one segment, or nil when the path names a
    /// document (ids may contain `/`: a document with the whole path as its id wins).
    func attachment(_ request: HTTPRequest, _ keyspace: Keyspace, path: [String]) throws -> HTTPResponse? {
        let idLength = path.first == "_design" ? 2 : 1
        guard path.count > idLength else { return nil }
        let collection = keyspace.collection
        if try collection.storedState(id: path.joined(separator: "/")).revisionID != nil { return nil }
        let id = path[..<idLength].joined(separator: "/")
        let name = path[idLength...].joined(separator: "/")
        guard let document = try collection.storedState(id: id).document else {
            return .error(404, "not_found", "missing")
        }
        let body = document.root.decode()
        let entry: Value?
        if name.hasPrefix(CouchDBDocument.blobAttachmentPrefix + "/") {
            entry = BlobSearch.value(at: String(name.dropFirst(CouchDBDocument.blobAttachmentPrefix.count)), in: body)
        } else {
            entry = body["_attachments"]?[name]
        }
        guard case .string(let digest)? = entry?[Blob.Key.digest], let file = collection.reader.blobs.path(for: digest),
            let length = collection.reader.blobs.length(of: digest)
        else {
            return .error(404, "not_found", "Document is missing attachment")
        }
        let contentType: String = if case .string(let type)? = entry?[Blob.Key.contentType] { type } else { Blob.defaultContentType }
        let headers = [("Content-Type", contentType), ("ETag", "\"\(digest)\"")]
        // The length goes ahead as Content-Length (as CouchDB sends it; a HEAD gets the same
        // header); the content streams after it.
        return HTTPResponse(
            status: 200, headers: headers,
            body: .sized(length: length) { stream in
                // send waits while the client is behind: a slow reader never makes the listener
                // hold more than a chunk or two of the file.
                try? await AttachmentContent.file(path: file).forEachChunk { chunk in
                    guard await stream.send([UInt8](chunk)) else { throw CancellationError() }
                }
                stream.finish()
            })
    }
}
