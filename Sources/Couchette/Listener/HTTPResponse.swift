/// What a handler answers: a status, headers and either a complete body or a producer that streams
/// chunks (continuous `_changes`).
struct HTTPResponse: Sendable {
    enum Body: Sendable {
        case bytes([UInt8])
        /// Sent with chunked transfer encoding; the producer runs in a task while the civetweb
        /// worker writes what it yields. It should return when ``ResponseStream/write(_:)`` returns
        /// false (the client went away) or its task is cancelled (the listener stops).
        case stream(@Sendable (ResponseStream) async -> Void)
        /// Exactly `length` bytes from a producer, sent with `Content-Length` instead of chunked
        /// (an attachment, whose size is known before it is read). A HEAD request gets the
        /// header without running the producer. Should the producer end early or run over, the
        /// connection is closed after the response, since the client cannot find the next one.
        case sized(length: UInt64, @Sendable (ResponseStream) async -> Void)
    }

    var status: Int
    var headers: [(String, String)]
    var body: Body

    init(status: Int, headers: [(String, String)] = [], body: Body) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    static func json(_ value: Value, status: Int = 200) -> HTTPResponse {
        HTTPResponse(
            status: status, headers: [("Content-Type", "application/json")],
            body: .bytes(Array((JSON.string(from: value) + "\n").utf8)))
    }

    /// CouchDB's error shape: `{"error":"not_found","reason":"missing"}`.
    static func error(_ status: Int, _ error: String, _ reason: String) -> HTTPResponse {
        json(.dictionary(["error": .string(error), "reason": .string(reason)]), status: status)
    }

    static func error(_ failure: any Error) -> HTTPResponse {
        if let failure = failure as? ListenerError { return failure.response }
        let (status, name) = HTTPResponse.couchDBError(for: failure)
        let reason = (failure as? CouchetteError)?.message ?? String(describing: failure)
        return error(status, name, reason)
    }

    /// The HTTP status and CouchDB error name for a failure thrown by the database or a handler.
    static func couchDBError(for failure: any Error) -> (status: Int, name: String) {
        if let failure = failure as? ListenerError { return (failure.status, failure.name) }
        guard let failure = failure as? CouchetteError else {
            return failure is CancellationError ? (503, "service_unavailable") : (500, "internal_server_error")
        }
        // CouchDB's answer to attachment data that does not match its digest.
        if BlobWriter.isDigestMismatch(failure) { return (400, "content_md5_mismatch") }
        switch failure.code {
        case .notFound: return (404, "not_found")
        case .conflict: return (409, "conflict")
        case .invalidParameter, .invalidQuery: return (400, "bad_request")
        case .unauthorized: return (401, "unauthorized")
        case .unsupported: return (501, "not_implemented")
        case .notOpen, .busy: return (503, "service_unavailable")
        case .http(let status): return (status, status == 412 ? "missing_stub" : "error")
        case .corruption, .io, .tls: return (500, "internal_server_error")
        case .full: return (507, "insufficient_storage")
        }
    }
}
