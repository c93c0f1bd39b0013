import Foundation

/// A whole HTTP answer from ``HTTPClient/data(for:)``: status, headers, body.
struct HTTPClientResponse: Sendable {
    /// The final status (informational `1xx` answers are skipped).
    let status: Int
    /// Header names lowercased; a repeated header keeps its values joined with `, ` — except
    /// `set-cookie`, whose values are kept one per line (`\n`), since cookies contain commas.
    let headers: [String: String]
    let body: Data

    /// The values of `Set-Cookie`, one per header line.
    var cookies: [String] {
        headers["set-cookie"].map { $0.split(separator: "\n").map(String.init) } ?? []
    }
}
