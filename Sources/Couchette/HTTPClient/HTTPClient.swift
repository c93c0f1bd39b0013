import Foundation

/// An HTTP/1.1 client on libcurl, for the replicator and for tests: keep-alive connections,
/// gzip, per-request connect and idle timeouts that always fire, cancellation that ends a
/// request at once, and streamed bodies with backpressure.
///
/// Each client owns one libcurl multi handle and the thread that drives it (``CurlLoop``); its
/// connections are reused by later requests to the same host and closed when the client is
/// released (an open ``HTTPClientStream`` keeps its client). Requests are independent: any number may run at once from any task.
///
/// ```swift
/// let client = HTTPClient()
/// let response = try await client.data(for: HTTPClientRequest(method: "GET", url: "http://127.0.0.1:5984/"))
/// print(response.status, String(decoding: response.body, as: UTF8.self))
///
/// let feed = try await client.stream(for: HTTPClientRequest(method: "GET", url: changesURL))
/// for try await chunk in feed { … }
/// ```
///
/// A refused certificate (untrusted, wrong pin, expired, client certificate refused) throws
/// `CouchetteError(.tls)`; a server that cannot be reached at all throws ``HTTPConnectError``;
/// timeouts and broken connections throw `CouchetteError(.io)`; an HTTP error status is an
/// answer like any other. Cancelling the calling task throws
/// `CancellationError` at once and removes the transfer from libcurl.
final class HTTPClient: Sendable {
    /// A client for tests and one-off requests, never released.
    static let shared = HTTPClient()

    private let loop: CurlLoop
    /// Used by every request that carries no TLS settings of its own.
    private let tls: HTTPClientTLS?

    init(tls: HTTPClientTLS? = nil) {
        loop = CurlLoop()
        self.tls = tls
    }

    deinit {
        loop.shutdown()
    }

    /// Sends `request` and returns the whole answer.
    /// - Parameter maxBodyBytes: a longer body fails the request with `.io`.
    /// - Throws: ``HTTPConnectError`` (no connection); `.io` (timeout, broken response, body too
    ///   long), `.invalidParameter`
    ///   (a URL or header libcurl refuses), `CancellationError`.
    func data(for request: HTTPClientRequest, maxBodyBytes: Int = 1 << 30) async throws -> HTTPClientResponse {
        try await run(request, mode: .collect(maxBytes: maxBodyBytes)) { transfer in
            try await transfer.response()
        }
    }

    /// Sends `request` and returns once the response head arrived; the body is then read from
    /// the returned stream as it comes.
    /// - Parameter bufferLimit: unread bytes past which the transfer pauses until the reader
    ///   catches up (the server then waits on TCP flow control).
    /// - Throws: as ``data(for:maxBodyBytes:)``, until the head arrived.
    func stream(for request: HTTPClientRequest, bufferLimit: Int = 1 << 20) async throws -> HTTPClientStream {
        try await run(request, mode: .stream(bufferLimit: bufferLimit)) { transfer in
            HTTPClientStream(head: try await transfer.head(), transfer: transfer, client: self)
        }
    }

    /// Starts `request` (with the client's TLS options unless it has its own) as one transfer
    /// and waits for `outcome`; cancelling the waiting task cancels the transfer at once.
    private func run<Outcome: Sendable>(
        _ request: HTTPClientRequest, mode: HTTPTransfer.Mode,
        _ outcome: (HTTPTransfer) async throws -> Outcome
    ) async throws -> Outcome {
        var request = request
        if request.tls == nil { request.tls = tls }
        let transfer = HTTPTransfer(id: loop.makeID(), mode: mode, loop: loop)
        return try await withTaskCancellationHandler {
            loop.start(transfer, request)
            return try await outcome(transfer)
        } onCancel: {
            transfer.cancel()
        }
    }
}
