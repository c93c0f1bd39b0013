import Foundation

/// One request for ``HTTPClient``: method, URL, headers, an optional body, and the limits that
/// bound how long it may take.
///
/// Every wait has a limit: ``connectTimeout`` bounds connecting (TCP and, later, TLS), and
/// ``idleTimeout`` bounds silence — it fires when no byte has moved in either direction for that
/// long, so a `_changes` heartbeat (one newline) keeps a quiet stream alive while a server that
/// accepts and never answers is given up on. A transfer paused because its reader is slow (see
/// ``HTTPClientStream``) is not silent: its idle clock stops while paused.
///
/// ```swift
/// var request = HTTPClientRequest(method: "GET", url: "http://127.0.0.1:5984/db/_changes?feed=longpoll")
/// request.idleTimeout = .seconds(90)
/// let response = try await client.data(for: request)
/// ```
struct HTTPClientRequest: Sendable {
    var method: String
    /// The whole URL, already percent-encoded (`http(s)://host:port/path?query`).
    var url: String
    /// Header names as sent; a header with an empty value is removed from libcurl's defaults.
    var headers: [(name: String, value: String)] = []
    var body: Data?
    /// A body streamed as it is sent, instead of ``body``.
    var upload: (any HTTPUploadSource)?
    var connectTimeout: Duration = .seconds(15)
    var idleTimeout: Duration = .seconds(60)
    /// Server trust and client certificate for `https://` URLs; nil: the system trust store.
    var tls: HTTPClientTLS?

    init(method: String, url: String, headers: [(name: String, value: String)] = [], body: Data? = nil) {
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
    }
}
