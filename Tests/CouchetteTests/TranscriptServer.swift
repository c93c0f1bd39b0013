import Foundation

@testable import Couchette

/// A loopback HTTP server answering as CouchDB did in the transcripts: `answer` picks (or
/// composes) the recorded response for each request; chunked responses are replayed chunk by
/// chunk at their recorded times, so headers and the start of a long-poll body arrive at once and
/// its rows later, as CouchDB sent them (`a05`, `a06`). Records every request it gets.
final class TranscriptServer: Sendable {
    struct Seen: Sendable { let method: String; let path: String; let query: [String: String]; let body: [UInt8] }
    let seen = Locked<[Seen]>([])
    private let server: HTTPServer
    let port: UInt16

    init(answer: @escaping @Sendable (HTTPRequest) -> HTTPResponse) throws {
        let seen = self.seen
        server = HTTPServer(maximumBodySize: 1 << 22) { request in
            seen.withLock { $0.append(Seen(method: request.method, path: request.path, query: request.query, body: request.body)) }
            return answer(request)
        }
        port = try server.start(host: "127.0.0.1", port: 0, threads: 4)
    }

    func url(_ database: String) -> URL { URL(string: "http://127.0.0.1:\(port)/\(database)")! }

    func stop() async { await server.stop() }

    /// The recorded response of `exchange`: its status, `Content-Type` and `Server` headers and
    /// its body, streamed chunk by chunk at the recorded times when it came in chunks.
    static func recorded(_ exchange: TranscriptExchange) -> HTTPResponse {
        let headers = ["Content-Type", "Server", "Cache-Control"].compactMap { name in exchange.responseHeaders[name].map { (name, $0) } }
        guard !exchange.chunks.isEmpty else {
            return HTTPResponse(status: exchange.status, headers: headers, body: .bytes(exchange.responseBody ?? []))
        }
        let chunks = exchange.chunks
        return HTTPResponse(
            status: exchange.status, headers: headers,
            body: .stream { stream in
                let start = ContinuousClock.now
                for chunk in chunks {
                    let due = start + .milliseconds(Int64(chunk.milliseconds))
                    if due > .now { try? await Task.sleep(until: due) }
                    guard !Task.isCancelled, stream.write(chunk.data) else { return }
                }
            })
    }

    static func json(_ value: Value, status: Int = 200) -> HTTPResponse {
        HTTPResponse(
            status: status, headers: [("Content-Type", "application/json"), ("Server", "CouchDB/3.5.0 (Erlang OTP/25)")],
            body: .bytes(Array((JSON.string(from: value) + "\n").utf8)))
    }
}
