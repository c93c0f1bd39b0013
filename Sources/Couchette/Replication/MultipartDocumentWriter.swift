import Foundation

/// Writes revisions as MIME multipart bodies the way CouchDB does: one revision as
/// `multipart/related` (its JSON part with `"follows": true` entries, then one part per
/// attachment with `Content-Disposition`, `Content-Type` and `Content-Length`), several as the
/// parts of a `multipart/mixed` (`open_revs`). Content streams from its files in chunks through
/// the caller's `write`, which may wait (backpressure), so memory stays at a chunk whatever the
/// attachments' size. The CRLF before each delimiter belongs to the delimiter (RFC 2046).
///
/// ```swift
/// let boundary = MultipartDocumentWriter.makeBoundary()
/// let (json, following) = CouchDBDocument.multipartJSON(revision, includeHistory: true)
/// try await MultipartDocumentWriter.writeRelated(json: json, following: following, boundary: boundary) { body += $0 }
/// ```
enum MultipartDocumentWriter {
    /// 32 random hex digits, as CouchDB's boundaries: no JSON text or content contains them by
    /// chance that matters (a part's content is delimited by CRLF, `--` and the boundary).
    static func makeBoundary() -> String {
        var generator = SystemRandomNumberGenerator()
        return (0..<2).map { _ in
            let text = String(generator.next() as UInt64, radix: 16)
            return String(repeating: "0", count: 16 - text.count) + text
        }.joined()
    }

    static func contentType(_ subtype: String, boundary: String) -> String { "multipart/\(subtype); boundary=\"\(boundary)\"" }

    /// One revision as a complete `multipart/related` body.
    static func writeRelated(
        json: Value, following: [FollowingAttachment], boundary: String,
        _ write: ([UInt8]) async throws -> Void
    ) async throws {
        try await write(Array("--\(boundary)\r\nContent-Type: application/json\r\n\r\n".utf8) + Array(JSON.string(from: json).utf8))
        for part in following {
            try await write(
                Array(
                    ("\r\n--\(boundary)\r\nContent-Disposition: attachment; filename=\(JSON.string(from: .string(part.name)))\r\n"
                        + "Content-Type: \(part.contentType)\r\nContent-Length: \(part.length)\r\n\r\n").utf8))
            var sent: UInt64 = 0
            try await part.content.forEachChunk { chunk in
                sent += UInt64(chunk.count)
                guard sent <= part.length else {
                    throw CouchetteError(.corruption, "attachment '\(part.name)' grew while it was being sent")
                }
                try await write([UInt8](chunk))
            }
            guard sent == part.length else {
                throw CouchetteError(.corruption, "attachment '\(part.name)' has \(sent) bytes, not the \(part.length) announced")
            }
        }
        try await write(Array("\r\n--\(boundary)--".utf8))
    }

    /// The exact length of ``writeRelated(json:following:boundary:_:)``'s body, for a
    /// `Content-Length` header.
    static func relatedLength(json: Value, following: [FollowingAttachment], boundary: String) -> UInt64 {
        var total = UInt64("--\(boundary)\r\nContent-Type: application/json\r\n\r\n".utf8.count + JSON.string(from: json).utf8.count)
        for part in following {
            total += UInt64(
                ("\r\n--\(boundary)\r\nContent-Disposition: attachment; filename=\(JSON.string(from: .string(part.name)))\r\n"
                    + "Content-Type: \(part.contentType)\r\nContent-Length: \(part.length)\r\n\r\n").utf8.count)
            total += part.length
        }
        return total + UInt64("\r\n--\(boundary)--".utf8.count)
    }

    /// How a `multipart/mixed` answer marks its parts. `open_revs` (one document): a missing
    /// revision is `{"missing": rev}`. `_bulk_get` (many documents, CouchDB 3.x): a nested
    /// `multipart/related` part also names its document and revision (`X-Doc-Id`, `X-Rev-Id`),
    /// and a failed fetch carries the error object `errorBody` makes, as in the JSON answer.
    enum MixedStyle {
        case openRevisions
        case bulkGet(errorBody: (_ id: String, _ revisionID: String, _ error: CouchetteError) -> Value)
    }

    /// `open_revs` or `_bulk_get` as `multipart/mixed`: each fetched revision one part,
    /// `application/json` when no content travels with it, a nested `multipart/related` when
    /// some does, and a failed fetch as `application/json; error="true"`.
    static func writeMixed(
        _ fetched: [RevisionFetch], includeHistory: Bool, style: MixedStyle = .openRevisions, boundary: String,
        _ write: ([UInt8]) async throws -> Void
    ) async throws {
        for fetch in fetched {
            switch fetch {
            case .found(let revision):
                let (json, following) = CouchDBDocument.multipartJSON(revision, includeHistory: includeHistory)
                if following.isEmpty {
                    try await write(Array("--\(boundary)\r\nContent-Type: application/json\r\n\r\n\(JSON.string(from: json))\r\n".utf8))
                } else {
                    let inner = makeBoundary()
                    var headers = ""
                    if case .bulkGet = style {
                        headers = "X-Doc-Id: \(headerSafe(revision.id))\r\nX-Rev-Id: \(headerSafe(revision.revisionID))\r\n"
                    }
                    try await write(
                        Array("--\(boundary)\r\n\(headers)Content-Type: \(contentType("related", boundary: inner))\r\n\r\n".utf8))
                    try await writeRelated(json: json, following: following, boundary: inner, write)
                    try await write(Array("\r\n".utf8))
                }
            case .failed(let id, let rev, let error):
                let body: Value =
                    switch style {
                    case .openRevisions: .dictionary(["missing": .string(rev)])
                    case .bulkGet(let errorBody): errorBody(id, rev, error)
                    }
                try await write(
                    Array("--\(boundary)\r\nContent-Type: application/json; error=\"true\"\r\n\r\n\(JSON.string(from: body))\r\n".utf8))
            }
        }
        try await write(Array("--\(boundary)--".utf8))
    }

    /// A document id or revision as a header value: CR and LF (which would end the header and
    /// let an id forge parts) become `%0D` and `%0A`, and `%` itself `%25`.
    static func headerSafe(_ text: String) -> String {
        guard text.contains(where: { $0 == "\r" || $0 == "\n" || $0 == "%" || $0 == "\r\n" }) else { return text }
        return text.replacingOccurrences(of: "%", with: "%25").replacingOccurrences(of: "\r\n", with: "%0D%0A")
            .replacingOccurrences(of: "\r", with: "%0D").replacingOccurrences(of: "\n", with: "%0A")
    }
}
