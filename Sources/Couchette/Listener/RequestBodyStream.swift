import Dispatch

/// A request body read while its handler runs, for bodies too large to hold (a `multipart/related`
/// PUT with a 500 MB attachment): the handler asks for the next piece with ``next()``, and the
/// civetweb worker thread — the only one that reads the connection — reads it and hands it over.
/// The worker waits on `wake` both for such requests and for the handler to finish, so it never
/// reads ahead: memory stays at one piece.
final class RequestBodyStream: Sendable {
    private struct State {
        var waiting: CheckedContinuation<[UInt8]?, any Error>?
        var ended = false
        var failure: String?
    }

    private let state = Locked(State())
    /// Signalled when the handler wants a piece (and by the handler's end, see ``HTTPServer``).
    let wake: DispatchSemaphore
    /// Bytes read per piece.
    static let pieceSize = 256 * 1024

    init(wake: DispatchSemaphore) { self.wake = wake }

    /// The next piece of the body; nil at its end.
    /// - Throws: `.io` when the connection broke or timed out while reading.
    func next() async throws -> [UInt8]? {
        try await withCheckedThrowingContinuation { continuation in
            let outcome = state.withLock { state -> Result<[UInt8]?, any Error>? in
                if let failure = state.failure { return .failure(CouchetteError(.io, failure)) }
                if state.ended { return .success(nil) }
                state.waiting = continuation
                return nil
            }
            if let outcome { continuation.resume(with: outcome) } else { wake.signal() }
        }
    }

    /// On the worker thread: answers a pending ``next()`` with what `read` fills (0: the body
    /// ended, negative: the connection failed). Returns false when no read was pending.
    func serve(_ read: (UnsafeMutableRawBufferPointer) -> Int) -> Bool {
        guard
            let continuation = state.withLock({ state -> CheckedContinuation<[UInt8]?, any Error>? in
                defer { state.waiting = nil }
                return state.waiting
            })
        else { return false }
        var piece = [UInt8](repeating: 0, count: Self.pieceSize)
        let count = piece.withUnsafeMutableBytes { read($0) }
        if count > 0 {
            continuation.resume(returning: Array(piece[0..<count]))
        } else if count == 0 {
            state.withLock { $0.ended = true }
            continuation.resume(returning: nil)
        } else {
            let message = "the request body could not be read (the connection broke or timed out)"
            state.withLock { $0.failure = message }
            continuation.resume(throwing: CouchetteError(.io, message))
        }
        return true
    }
}
