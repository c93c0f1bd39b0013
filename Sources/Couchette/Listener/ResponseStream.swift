import Dispatch

/// The hand-off between an async producer of response chunks and the civetweb worker thread that
/// writes them: the producer never blocks, the worker blocks in ``next()`` until there is
/// something to write.
final class ResponseStream: Sendable {
    private struct State {
        var chunks: [UInt8] = []
        var finished = false
        var cancelled = false
        /// A producer waiting in ``send(_:)`` for the worker to take what is queued.
        var waiting: CheckedContinuation<Void, Never>?
    }

    /// Queued bytes past which ``send(_:)`` waits for the client to take them.
    static let highWater = 1 << 20
    private let state = Locked(State())
    private let signal = DispatchSemaphore(value: 0)

    /// Queues bytes for the client; false once the client is gone or the stream was finished.
    @discardableResult
    func write(_ bytes: [UInt8]) -> Bool {
        let accepted = state.withLock { state in
            guard !state.cancelled, !state.finished else { return false }
            state.chunks += bytes
            return true
        }
        if accepted { signal.signal() }
        return accepted
    }

    @discardableResult
    func write(_ text: String) -> Bool { write(Array(text.utf8)) }

    /// Queues bytes, then waits while more than ``highWater`` bytes are queued: a slow client
    /// slows the producer instead of making the server hold everything (file contents).
    /// False once the client is gone or the task is cancelled.
    func send(_ bytes: [UInt8]) async -> Bool {
        guard write(bytes) else { return false }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let resumeNow = state.withLock { state -> Bool in
                    guard state.chunks.count > Self.highWater, !state.cancelled, !state.finished, !Task.isCancelled else { return true }
                    state.waiting = continuation
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        } onCancel: {
            wake()
        }
        return !isCancelled && !Task.isCancelled
    }

    /// Resumes a producer waiting in ``send(_:)``.
    private func wake() {
        state.withLock { state in
            defer { state.waiting = nil }
            return state.waiting
        }?.resume()
    }

    /// No more chunks: the worker ends the response once it has written what is queued.
    func finish() {
        state.withLock { $0.finished = true }
        signal.signal()
        wake()
    }

    /// Called by the worker when a write to the client failed.
    func cancel() {
        state.withLock { $0.cancelled = true }
        wake()
    }

    var isCancelled: Bool { state.withLock { $0.cancelled } }

    /// Blocks the calling (civetweb) thread until bytes are queued; nil when finished and drained.
    /// Never call from the Swift cooperative pool.
    func next() -> [UInt8]? {
        while true {
            let taken: [UInt8]?? = state.withLock { state in
                if !state.chunks.isEmpty {
                    defer { state.chunks = [] }
                    return .some(state.chunks)
                }
                return state.finished || state.cancelled ? .some(nil) : nil
            }
            if let taken {
                wake()
                return taken
            }
            signal.wait()
        }
    }
}
