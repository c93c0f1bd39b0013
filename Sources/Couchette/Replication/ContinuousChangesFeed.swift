import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// One `_changes?feed=continuous` response read as it arrives, through a `URLSession` data
/// delegate (Linux has no `URLSession.bytes`): one JSON row per line, blank lines as heartbeats,
/// a final `{"last_seq": …}` line when the server ends the feed.
///
/// Rows are buffered until ``next(limit:timeout:)`` takes them; past ``bufferLimit`` rows the
/// connection is closed (the buffered rows stay readable), so a slow consumer never makes it
/// grow without bound. No bytes for ``idleLimit`` (heartbeats included) means the connection is
/// dead. State lives in a `Locked`, written by URLSession's delegate queue and read by the
/// consumer, so the class has no mutable stored properties of its own.
final class ContinuousChangesFeed: NSObject, URLSessionDataDelegate, Sendable {
    /// The server answered, but not with a continuous feed (an error status other than
    /// 401/403/404, or a body that is not JSON lines): use long polls instead.
    struct Unsupported: Error { let reason: String }

    /// What one ``next(limit:timeout:)`` found.
    enum Outcome: Sendable {
        case changes(PeerChanges)
        /// The server ended the feed with this `last_seq`.
        case ended(lastSequence: Value)
        /// The connection ended without `last_seq`, or was closed because the buffer was full
        /// and has been drained since.
        case closed
        /// Nothing within the timeout.
        case quiet
    }

    private struct State {
        var partialLine: [UInt8] = []
        var rows: [PeerChange] = []
        /// The sequence the consumer stands at: `since`, then the last row taken.
        var position: Value?
        var endSequence: Value?
        var isClosed = false
        var failure: (any Error)?
        var lastActivity = ContinuousClock.now
        var session: URLSession?
        var waiters: [Int: CheckedContinuation<Void, Never>] = [:]
        var nextWaiter = 0
    }

    static let bufferLimit = 10_000
    let idleLimit: Duration
    private let identifier: String
    private let state: Locked<State>

    /// Starts reading `url` (a `_changes?feed=continuous&heartbeat=…` URL) at once.
    /// - Parameter idleLimit: silence that means a dead connection; by default two heartbeats
    ///   and 5 seconds.
    init(url: URL, headers: [String: String], since: Value?, heartbeat: Duration, identifier: String, idleLimit: Duration? = nil) {
        self.identifier = identifier
        self.idleLimit = idleLimit ?? heartbeat * 2 + .seconds(5)
        state = Locked(State(position: since))
        super.init()
        let configuration = URLSessionConfiguration.ephemeral
        configuration.httpCookieAcceptPolicy = .never
        configuration.httpShouldSetCookies = false
        configuration.urlCache = nil
        // The watchdog in `next` detects silence; these only bound what libcurl does on its own.
        configuration.timeoutIntervalForRequest = 24 * 3600
        configuration.timeoutIntervalForResource = 365 * 24 * 3600
        let session = URLSession(configuration: configuration, delegate: self, delegateQueue: nil)
        var request = URLRequest(url: url, timeoutInterval: 24 * 3600)
        request.setValue("application/json", forHTTPHeaderField: "Accept")
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        state.withLock { $0.session = session }
        session.dataTask(with: request).resume()
    }

    /// Ends the connection; buffered rows stay readable. Invalidating the session also releases
    /// its strong reference to this delegate.
    /// - Parameter cancelling: false when the response is over or ending by itself: cancelling a
    ///   `URLSessionTask` as it completes can crash FoundationNetworking (see
    ///   ``URLSession/dataAbandonedOnCancel(for:)``).
    func close(cancelling: Bool = true) {
        let (session, waiters) = state.withLock { state -> (URLSession?, [CheckedContinuation<Void, Never>]) in
            state.isClosed = true
            defer { state.session = nil; state.waiters = [:] }
            return (state.session, Array(state.waiters.values))
        }
        if cancelling { session?.invalidateAndCancel() } else { session?.finishTasksAndInvalidate() }
        waiters.forEach { $0.resume() }
    }

    /// Moves the consumer to `since`: true when the feed can go on from there — it stands there,
    /// or a buffered row has that sequence (rows up to it are dropped).
    func seek(to since: Value?) -> Bool {
        state.withLock { state in
            if state.position == since { return !(state.rows.isEmpty && (state.isClosed || state.failure != nil || state.endSequence != nil)) }
            guard let index = state.rows.firstIndex(where: { $0.sequence == since }) else { return false }
            state.rows.removeFirst(index + 1)
            state.position = since
            return true
        }
    }

    /// Up to `limit` buffered rows as soon as there are any; otherwise waits for rows, the end
    /// of the feed or `timeout`.
    /// - Throws: ``Unsupported``; `.unauthorized` for 401/403; `.http` for other error statuses;
    ///   `.io` when the connection failed or stayed silent past ``idleLimit``; `CancellationError`.
    func next(limit: Int, timeout: Duration) async throws -> Outcome {
        let clock = ContinuousClock()
        let deadline = clock.now + timeout
        while true {
            try Task.checkCancellation()
            if let outcome = try take(limit) { return outcome }
            let now = clock.now
            if now >= deadline { return .quiet }
            let silentUntil = state.withLock { $0.lastActivity } + idleLimit
            if now >= silentUntil {
                throw CouchetteError(.io, "\(identifier)/_changes sent nothing, not even a heartbeat, for \(idleLimit)")
            }
            await waitForActivity(upTo: min(deadline, silentUntil) - now)
        }
    }

    private func take(_ limit: Int) throws -> Outcome? {
        try state.withLock { state in
            if !state.rows.isEmpty {
                let taken = Array(state.rows.prefix(max(limit, 1)))
                state.rows.removeFirst(taken.count)
                state.position = taken[taken.count - 1].sequence
                return .changes(PeerChanges(results: taken, lastSequence: taken[taken.count - 1].sequence))
            }
            if let failure = state.failure { throw failure }
            if let end = state.endSequence { return .ended(lastSequence: end) }
            return state.isClosed ? .closed : nil
        }
    }

    /// Returns when the delegate reports something, after `duration`, or on cancellation.
    private func waitForActivity(upTo duration: Duration) async {
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await self.nextSignal() }
            group.addTask { try? await Task.sleep(for: duration) }
            await group.next()
            group.cancelAll()
        }
    }

    private func nextSignal() async {
        let id = state.withLock { state in
            state.nextWaiter += 1
            return state.nextWaiter
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let resumeNow = state.withLock { state -> Bool in
                    if Task.isCancelled || !state.rows.isEmpty || state.isClosed || state.failure != nil || state.endSequence != nil {
                        return true
                    }
                    state.waiters[id] = continuation
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        } onCancel: {
            state.withLock { $0.waiters.removeValue(forKey: id) }?.resume()
        }
    }

    /// Updates the state under the lock, then wakes every waiter.
    private func update(_ body: (inout State) -> Void) {
        let waiters = state.withLock { state in
            body(&state)
            state.lastActivity = ContinuousClock.now
            defer { state.waiters = [:] }
            return Array(state.waiters.values)
        }
        waiters.forEach { $0.resume() }
    }

    /// Records `error` for the consumer; the task is already over or being cancelled.
    private func fail(_ error: any Error) {
        update { state in
            if state.failure == nil && state.endSequence == nil && !state.isClosed { state.failure = error }
        }
        close(cancelling: false)
    }

    // MARK: - URLSessionDataDelegate

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
                    completionHandler: @escaping @Sendable (URLSession.ResponseDisposition) -> Void) {
        // Always `.allow`: refusing a response makes FoundationNetworking crash when the transfer
        // completes ("Transfer completed, but there's no response"). An error's body is small and
        // ignored once the failure is recorded.
        completionHandler(.allow)
        let status = (response as? HTTPURLResponse)?.statusCode ?? 0
        switch status {
        case 200..<300: update { _ in }
        case 401, 403: fail(CouchetteError(.unauthorized, "GET \(identifier)/_changes failed with HTTP \(status)"))
        case 404: fail(CouchetteError(.http(status: 404), "GET \(identifier)/_changes failed with HTTP 404 (not_found)"))
        case 500...: fail(CouchetteError(.http(status: status), "GET \(identifier)/_changes failed with HTTP \(status)"))
        default: fail(Unsupported(reason: "HTTP \(status)"))
        }
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        var problem: (any Error)?
        var overflow = false
        update { state in
            guard state.failure == nil, !state.isClosed else { return }   // what follows a failure is ignored
            state.partialLine += data
            while let newline = state.partialLine.firstIndex(of: UInt8(ascii: "\n")) {
                let line = String(decoding: state.partialLine[..<newline], as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
                state.partialLine.removeSubrange(...newline)
                guard !line.isEmpty else { continue }   // a heartbeat
                do {
                    let row = try JSON.parse(line)
                    if row["results"] != nil {
                        throw Unsupported(reason: "a normal _changes body instead of a continuous feed")
                    } else if row["id"] == nil, let last = row["last_seq"] {
                        state.endSequence = last
                    } else {
                        state.rows.append(try PeerChange(couchDBRow: row, from: identifier))
                    }
                } catch let error as CouchetteError where error.code == .invalidParameter {
                    problem = Unsupported(reason: "a line that is not JSON: \(line.prefix(100))")
                } catch {
                    problem = error
                }
                if problem != nil { return }
            }
            overflow = state.rows.count > Self.bufferLimit
        }
        if let problem {
            fail(problem)   // a server that does not stream ends its response soon by itself
        } else if overflow {
            close()
        } else if state.withLock({ $0.endSequence != nil }) {
            close(cancelling: false)   // the server ends the response itself
        }
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        if let error, state.withLock({ !$0.isClosed }) {
            fail(CouchetteError(.io, "the _changes feed of \(identifier) broke: \((error as NSError).localizedDescription)"))
        } else {
            close(cancelling: false)
        }
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didReceive challenge: URLAuthenticationChallenge,
                    completionHandler: @escaping @Sendable (URLSession.AuthChallengeDisposition, URLCredential?) -> Void) {
        completionHandler(.cancelAuthenticationChallenge, nil)
    }
}

extension PeerChange {
    /// A `_changes` row with `style=all_docs`: `{"seq", "id", "changes": [{"rev"}], "deleted"}`.
    /// - Throws: `.http(502)` naming `peer` when a field is missing.
    init(couchDBRow row: Value, from peer: String) throws {
        guard let sequence = row["seq"], case .string(let id)? = row["id"], case .array(let changes)? = row["changes"] else {
            throw CouchetteError(.http(status: 502), "\(peer) sent a malformed _changes row: \(JSON.string(from: row).prefix(200))")
        }
        let revisions = changes.compactMap { change -> String? in if case .string(let rev)? = change["rev"] { rev } else { nil } }
        self.init(sequence: sequence, id: id, leafRevisions: revisions, deleted: row["deleted"]?.asBool ?? false)
    }
}
