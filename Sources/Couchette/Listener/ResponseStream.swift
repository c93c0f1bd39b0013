import Dispatch

/// The hand-off between an async producer of response chunks and the civetweb worker thread that
/// writes them: the producer never blocks, the worker blocks in ``next()`` until there is
/// something to write.
final class ResponseStream: Sendable {
    private struct State {
        var chunks: [UInt8] = []
        var finished = false
        var cancelled = false
    }
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

    /// No more chunks: the worker ends the response once it has written what is queued.
    func finish() {
        state.withLock { $0.finished = true }
        signal.signal()
    }

    /// Called by the worker when a write to the client failed.
    func cancel() {
        state.withLock { $0.cancelled = true }
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
            if let taken { return taken }
            signal.wait()
        }
    }
}
