/// A request body read piece by piece as libcurl sends it, so a large body (a 500 MB attachment)
/// is never held in memory: ``HTTPClientRequest/upload``. Called on the client's loop thread
/// only, one transfer at a time, so implementations need no locking of their own beyond being
/// `Sendable`.
///
/// ```swift
/// var request = HTTPClientRequest(method: "PUT", url: url, headers: [("Content-Type", type)])
/// request.upload = try MultipartUpload(json: json, following: parts, boundary: boundary)
/// ```
protocol HTTPUploadSource: Sendable {
    /// The exact number of bytes the body has (sent as `Content-Length`).
    var length: UInt64 { get }
    /// Fills `buffer` with the next bytes; 0 at the end, nil on a failure (the transfer is
    /// aborted).
    func read(into buffer: UnsafeMutableRawBufferPointer) -> Int?
    /// Starts again from the first byte (libcurl resends a body on a kept-alive connection the
    /// server had closed); false when it cannot.
    func rewind() -> Bool
}
