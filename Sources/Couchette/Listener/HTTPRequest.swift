import Foundation

/// One HTTP request as the listener's handlers see it: read completely off the civetweb worker
/// thread before any Swift handler runs, so handlers never touch the connection.
struct HTTPRequest: Sendable {
    /// `GET`, `PUT`, … as sent.
    var method: String
    /// The percent-decoded path, always starting with `/`.
    var path: String
    /// Query parameters, percent-decoded (`+` is a space); the last one wins when repeated.
    var query: [String: String]
    /// Header values by lowercased name.
    var headers: [String: String]
    var body: [UInt8]
    /// Set instead of ``body`` for a body read while the handler runs (see
    /// ``HTTPServer/streamsBody(method:contentType:)``).
    var bodyStream: RequestBodyStream?

    init(method: String, path: String, rawQuery: String, headers: [String: String], body: [UInt8]) {
        self.method = method
        self.path = path
        self.query = HTTPRequest.parseQuery(rawQuery)
        self.headers = headers
        self.body = body
    }

    func header(_ name: String) -> String? { headers[name.lowercased()] }

    /// The path split on `/`, without empty components. Document ids may contain `/` (sent as
    /// `%2F`, which civetweb decodes), so routes join the tail back together.
    var pathComponents: [String] { path.split(separator: "/", omittingEmptySubsequences: true).map(String.init) }

    static func parseQuery(_ raw: String) -> [String: String] {
        var result: [String: String] = [:]
        for pair in raw.split(separator: "&", omittingEmptySubsequences: true) {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let name = decodeComponent(String(parts[0]))
            result[name] = parts.count > 1 ? decodeComponent(String(parts[1])) : ""
        }
        return result
    }

    /// Form-style decoding; a malformed escape is kept as written rather than rejected.
    static func decodeComponent(_ text: String) -> String {
        let spaced = text.replacingOccurrences(of: "+", with: " ")
        return spaced.removingPercentEncoding ?? spaced
    }
}
