import Foundation

/// What a caller and ``HTTPClient``'s loop thread share about one request: the response head,
/// body bytes not yet read, and the outcome. Everything is in one `Locked` state; the loop
/// thread writes it from libcurl's callbacks (``receiveHead(_:)``, ``receive(_:)``,
/// ``finish(_:)``) and callers read it, waiting on continuations that exactly one party resumes:
/// whoever removes a waiter from ``State/waiters`` under the lock resumes it.
///
/// The loop never waits for a caller. A full buffer (``Mode/stream(bufferLimit:)``) pauses the
/// transfer: ``receive(_:)`` refuses the bytes, libcurl keeps them and stops reading the socket,
/// and the reader that empties the buffer asks the loop to go on.
final class HTTPTransfer: Sendable {
    /// Status and headers (names lowercased) of the final response.
    struct Head: Sendable {
        let status: Int
        let headers: [String: String]
    }

    /// How the body is kept.
    enum Mode: Sendable {
        /// All of it, for ``HTTPClient/data(for:)``; more than `maxBytes` fails the request.
        case collect(maxBytes: Int)
        /// Read in chunks by ``HTTPClientStream``; more than `bufferLimit` unread bytes pauses
        /// the transfer until the reader catches up.
        case stream(bufferLimit: Int)
    }

    /// What a waiter waits for.
    private enum Awaited {
        case head, bytes, end
    }

    private struct Waiter {
        let awaited: Awaited
        let continuation: CheckedContinuation<Void, Never>
    }

    private struct State {
        var head: Head?
        var body = Data()
        /// Set once: success when the response ended, otherwise why it did not.
        var outcome: Result<Void, any Error>?
        /// True while the loop holds the transfer paused because `body` is full.
        var paused = false
        var waiters: [Int: Waiter] = [:]
        var nextWaiter = 0

        func isReady(for awaited: Awaited) -> Bool {
            if outcome != nil { return true }
            return switch awaited {
            case .head: head != nil
            case .bytes: !body.isEmpty
            case .end: false
            }
        }
    }

    let id: Int
    let mode: Mode
    private let state = Locked(State())
    /// Told about cancellations and resumed reads; the loop outlives every transfer that
    /// references it (see ``CurlLoop``).
    private let loop: CurlLoop

    init(id: Int, mode: Mode, loop: CurlLoop) {
        self.id = id
        self.mode = mode
        self.loop = loop
    }

    // MARK: - Callers

    /// The response head, once the server sent all of it.
    /// - Throws: the transfer's failure; `CancellationError` (the transfer is cancelled).
    func head() async throws -> Head {
        while true {
            let head = try state.withLock { state -> Head? in
                if let head = state.head { return head }
                if case .failure(let error)? = state.outcome { throw error }
                return nil
            }
            if let head { return head }
            try await wait(for: .head)
        }
    }

    /// The whole response, once it ended.
    func response() async throws -> HTTPClientResponse {
        while true {
            let response = try state.withLock { state -> HTTPClientResponse? in
                switch state.outcome {
                case .failure(let error)?: throw error
                case .success?:
                    let head = state.head ?? Head(status: 0, headers: [:])
                    return HTTPClientResponse(status: head.status, headers: head.headers, body: state.body)
                case nil: return nil
                }
            }
            if let response { return response }
            try await wait(for: .end)
        }
    }

    /// The body bytes received since the last read: waits until there are some, the body ended
    /// (nil), or `limit` passed (empty data).
    /// - Throws: the transfer's failure; `CancellationError` (the transfer is cancelled).
    func read(waitingAtMost limit: Duration?) async throws -> Data? {
        let clock = ContinuousClock()
        let deadline = limit.map { clock.now + $0 }
        while true {
            let (taken, resume) = try state.withLock { state -> (Data?, Bool) in
                if !state.body.isEmpty {
                    let taken = state.body
                    let wasPaused = state.paused
                    state.body = Data()
                    state.paused = false
                    return (taken, wasPaused)
                }
                switch state.outcome {
                case .failure(let error)?: throw error
                case .success?: return (nil, false)
                case nil: return (Data(), false)
                }
            }
            if resume { loop.resume(id) }
            guard let taken else { return nil }
            if !taken.isEmpty { return taken }
            if let deadline {
                let now = clock.now
                if now >= deadline { return Data() }
                try await wait(for: .bytes, upTo: deadline - now)
            } else {
                try await wait(for: .bytes)
            }
        }
    }

    /// Body bytes received and not yet read.
    var unreadByteCount: Int {
        state.withLock { $0.body.count }
    }

    /// Ends the transfer unless it already ended: waiting callers resume at once with
    /// `CancellationError`, and the loop removes the easy handle.
    func cancel() {
        if finish(.failure(CancellationError())) { loop.cancel(id) }
    }

    /// Waits until `awaited` is ready; cancelling the task cancels the transfer at once, from
    /// the cancelling thread (not when the waiting task next runs).
    private func wait(for awaited: Awaited, upTo limit: Duration? = nil) async throws {
        await withTaskCancellationHandler {
            if let limit {
                // Cancelling the group's children (the race's loser) does not reach the handler.
                await withTaskGroup(of: Void.self) { group in
                    group.addTask { await self.signal(awaited) }
                    group.addTask { try? await Task.sleep(for: limit) }
                    await group.next()
                    group.cancelAll()
                }
            } else {
                await signal(awaited)
            }
        } onCancel: {
            cancel()
        }
        if Task.isCancelled {
            cancel()
            throw CancellationError()
        }
    }

    /// Returns when `awaited` is ready or the task is cancelled.
    private func signal(_ awaited: Awaited) async {
        let id = state.withLock { state in
            state.nextWaiter += 1
            return state.nextWaiter
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let resumeNow = state.withLock { state -> Bool in
                    if Task.isCancelled || state.isReady(for: awaited) { return true }
                    state.waiters[id] = Waiter(awaited: awaited, continuation: continuation)
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        } onCancel: {
            state.withLock { $0.waiters.removeValue(forKey: id) }?.continuation.resume()
        }
    }

    // MARK: - The loop thread

    /// Whether the transfer already ended (cancelled by its caller, or failed).
    var hasEnded: Bool {
        state.withLock { $0.outcome != nil }
    }

    func receiveHead(_ head: Head) {
        update { state in
            if state.head == nil { state.head = head }
        }
    }

    /// Takes `bytes` into the body.
    /// - Returns: `.taken`; `.full` when the stream's buffer is full (the loop pauses the
    ///   transfer and offers the same bytes again once resumed); `.refused` when the transfer
    ///   ended or the body is over its limit (the loop aborts it).
    func receive(_ bytes: UnsafeRawBufferPointer) -> Delivery {
        var delivery = Delivery.taken
        update { state in
            guard state.outcome == nil else {
                delivery = .refused
                return
            }
            switch mode {
            case .collect(let maxBytes):
                guard state.body.count + bytes.count <= maxBytes else {
                    state.outcome = .failure(CouchetteError(.io, "the response body is larger than \(maxBytes) bytes"))
                    delivery = .refused
                    return
                }
            case .stream(let bufferLimit):
                guard state.body.count < bufferLimit else {
                    state.paused = true
                    delivery = .full
                    return
                }
            }
            state.body.append(bytes.assumingMemoryBound(to: UInt8.self))
        }
        return delivery
    }

    enum Delivery {
        case taken, full, refused
    }

    /// Records the outcome unless there is one already, waking every waiter.
    /// - Returns: whether this call set it.
    @discardableResult
    func finish(_ outcome: Result<Void, any Error>) -> Bool {
        var isFirst = false
        update { state in
            guard state.outcome == nil else { return }
            state.outcome = outcome
            isFirst = true
        }
        return isFirst
    }

    /// Changes the state, then resumes the waiters whatever changed is ready for.
    private func update(_ body: (inout State) -> Void) {
        let ready = state.withLock { state -> [Waiter] in
            body(&state)
            var ready: [Waiter] = []
            for (id, waiter) in state.waiters where state.isReady(for: waiter.awaited) {
                ready.append(waiter)
                state.waiters[id] = nil
            }
            return ready
        }
        ready.forEach { $0.continuation.resume() }
    }
}
