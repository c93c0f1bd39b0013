import Foundation

/// A response whose body is read as it arrives (``HTTPClient/stream(for:bufferLimit:)``): the
/// status and headers at once, then the body as an `AsyncSequence` of byte chunks.
///
/// At most the client's buffer limit of unread bytes is held; past it the transfer pauses and
/// the server is slowed by TCP flow control, so a slow reader never grows memory. Releasing the
/// stream, or cancelling the task that reads it, ends the transfer.
///
/// ```swift
/// let feed = try await client.stream(for: request)
/// guard feed.status == 200 else { … }
/// for try await chunk in feed { lines.append(chunk) }
/// ```
final class HTTPClientStream: AsyncSequence, Sendable {
    typealias Element = Data

    let status: Int
    /// Header names lowercased.
    let headers: [String: String]
    private let transfer: HTTPTransfer
    /// Kept alive while the body is read: releasing the client ends its transfers.
    private let client: HTTPClient

    init(head: HTTPTransfer.Head, transfer: HTTPTransfer, client: HTTPClient) {
        status = head.status
        headers = head.headers
        self.transfer = transfer
        self.client = client
    }

    deinit {
        transfer.cancel()
    }

    /// What one ``read(waitingAtMost:)`` found.
    enum Read: Sendable, Equatable {
        case bytes(Data)
        /// The body ended normally.
        case end
        /// Nothing arrived within the wait.
        case quiet
    }

    /// The bytes received since the last read, waiting at most `limit` for some.
    /// - Throws: `.io` when the connection broke or stayed silent past the request's idle
    ///   timeout; `CancellationError` (the transfer ends too).
    func read(waitingAtMost limit: Duration) async throws -> Read {
        guard let data = try await transfer.read(waitingAtMost: limit) else { return .end }
        return data.isEmpty ? .quiet : .bytes(data)
    }

    /// Body bytes received and not yet read (at most about the buffer limit).
    var unreadByteCount: Int { transfer.unreadByteCount }

    /// Ends the transfer now; later reads throw `CancellationError`.
    func cancel() {
        transfer.cancel()
    }

    struct AsyncIterator: AsyncIteratorProtocol {
        let stream: HTTPClientStream

        func next() async throws -> Data? {
            try await stream.transfer.read(waitingAtMost: nil)
        }
    }

    func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(stream: self)
    }
}
