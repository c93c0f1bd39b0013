import Foundation

/// One `_changes?feed=continuous` response read as it arrives, through ``HTTPClient``'s
/// streamed bodies: one JSON row per line, blank lines as heartbeats, a final
/// `{"last_seq": …}` line when the server ends the feed.
///
/// Bytes are read and parsed only when ``next(limit:timeout:)`` asks, so the client's bounded
/// buffer is the feed's buffer: while the replicator is busy with a batch, at most that many
/// unread bytes wait and the server is then held back by TCP flow control. No bytes for
/// ``idleLimit`` (heartbeats included; the clock stops while the buffer is full) means the
/// connection is dead: the client ends the transfer and the next read throws `.io`. The
/// request is sent on the first ``next(limit:timeout:)``. One consumer at a time; the state
/// is in a `Locked` so that ``close()`` may come from anywhere.
final class ContinuousChangesFeed: Sendable {
    /// The server answered, but not with a continuous feed (an error status other than
    /// 401/403/404/5xx, or a body that is not JSON lines): use long polls instead.
    struct Unsupported: Error { let reason: String }

    /// What one ``next(limit:timeout:)`` found.
    enum Outcome: Sendable {
        case changes(PeerChanges)
        /// The server ended the feed with this `last_seq`.
        case ended(lastSequence: Value)
        /// The connection ended without `last_seq`, or the feed was closed.
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
        /// A whole line (a row, `last_seq` or a heartbeat) arrived: the server streams a
        /// continuous feed. Until then, silence does not end a wait at its deadline.
        var isConfirmed = false
        var failure: (any Error)?
        var stream: HTTPClientStream?
    }

    /// Unread response bytes held before the transfer pauses.
    static let bufferLimit = 1 << 20
    /// A longer line (no newline within it) fails the feed: one row is far smaller.
    static let maximumLineLength = 16 << 20
    let idleLimit: Duration
    private let identifier: String
    private let client: HTTPClient
    private let request: HTTPClientRequest
    private let state: Locked<State>

    /// A feed of `url` (a `_changes?feed=continuous&heartbeat=…` URL), opened on first use.
    /// - Parameter idleLimit: silence that means a dead connection; by default two heartbeats
    ///   and 5 seconds.
    init(
        client: HTTPClient, url: String, headers: [(name: String, value: String)], since: Value?, heartbeat: Duration,
        identifier: String, idleLimit: Duration? = nil
    ) {
        self.identifier = identifier
        self.client = client
        self.idleLimit = idleLimit ?? heartbeat * 2 + .seconds(5)
        var request = HTTPClientRequest(method: "GET", url: url, headers: [("Accept", "application/json")] + headers)
        request.idleTimeout = self.idleLimit
        self.request = request
        state = Locked(State(position: since))
    }

    /// Ends the connection; buffered rows stay readable.
    func close() {
        let stream = state.withLock { state -> HTTPClientStream? in
            state.isClosed = true
            defer { state.stream = nil }
            return state.stream
        }
        stream?.cancel()
    }

    /// Moves the consumer to `since`: true when the feed can go on from there — it stands there,
    /// or a buffered row has that sequence (rows up to it are dropped).
    func seek(to since: Value?) -> Bool {
        state.withLock { state in
            if state.position == since {
                return !(state.rows.isEmpty && (state.isClosed || state.failure != nil || state.endSequence != nil))
            }
            guard let index = state.rows.firstIndex(where: { $0.sequence == since }) else { return false }
            state.rows.removeFirst(index + 1)
            state.position = since
            return true
        }
    }

    /// Up to `limit` buffered rows as soon as there are any; otherwise reads until there are
    /// rows, the feed ends, or `timeout` passed.
    ///
    /// Until the feed's first line arrived, the wait goes on past `timeout` (up to
    /// ``idleLimit`` of silence): a server that ignores `feed=continuous` answers a long poll,
    /// whose first line (`{"results":[`) tells so, and a busy process may take the whole
    /// `timeout` to get to bytes that arrived in time — a `.quiet` then would stand for the
    /// long poll's rows. A continuous feed sends its first heartbeat within half the wait.
    /// Bytes already received are always read before the deadline is looked at.
    /// - Throws: ``Unsupported``; `.unauthorized` for 401/403; `.http` for other error statuses;
    ///   `.io` when the connection failed or stayed silent past ``idleLimit``; `CancellationError`.
    func next(limit: Int, timeout: Duration) async throws -> Outcome {
        let clock = ContinuousClock()
        let deadline = clock.now + timeout
        while true {
            try Task.checkCancellation()
            if let outcome = try take(limit) { return outcome }
            let stream = try await openedStream()
            let now = clock.now
            let confirmed = state.withLock { $0.isConfirmed }
            if confirmed, now >= deadline, stream.unreadByteCount == 0 { return .quiet }
            let read: HTTPClientStream.Read
            do {
                // Unconfirmed: wait for the first line; the transfer's idle timeout bounds it.
                read = try await stream.read(waitingAtMost: confirmed ? max(deadline - now, .zero) : idleLimit)
            } catch is CancellationError where !Task.isCancelled {
                return .closed  // ``close()`` ended the transfer
            } catch let error as CouchetteError {
                record(CouchetteError(error.code, "the _changes feed of \(identifier) broke: \(error.message)"))
                continue
            }
            switch read {
            case .bytes(let bytes): try parse(bytes)
            case .end: close()
            case .quiet: if confirmed { return .quiet }
            }
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

    /// The response, requested now if it was not yet; its status checked.
    private func openedStream() async throws -> HTTPClientStream {
        if let stream = state.withLock({ $0.stream }) { return stream }
        let stream = try await client.stream(for: request, bufferLimit: Self.bufferLimit)
        let failure: (any Error)? =
            switch stream.status {
            case 200..<300: nil
            case 401, 403: CouchetteError(.unauthorized, "GET \(identifier)/_changes failed with HTTP \(stream.status)")
            case 404: CouchetteError(.http(status: 404), "GET \(identifier)/_changes failed with HTTP 404 (not_found)")
            case 500...: CouchetteError(.http(status: stream.status), "GET \(identifier)/_changes failed with HTTP \(stream.status)")
            default: Unsupported(reason: "HTTP \(stream.status)")
            }
        if let failure {
            stream.cancel()
            record(failure)
            throw failure
        }
        let isClosed = state.withLock { state in
            if !state.isClosed { state.stream = stream }
            return state.isClosed
        }
        if isClosed { stream.cancel() }
        return stream
    }

    /// Records `error` for the consumer and ends the connection.
    private func record(_ error: any Error) {
        state.withLock { state in
            if state.failure == nil && state.endSequence == nil && !state.isClosed { state.failure = error }
        }
        close()
    }

    /// Splits `bytes` into lines: rows are buffered, `last_seq` ends the feed.
    private func parse(_ bytes: Data) throws {
        var problem: (any Error)?
        let ended = state.withLock { state -> Bool in
            state.partialLine += bytes
            guard state.partialLine.count <= Self.maximumLineLength else {
                problem = CouchetteError(
                    .http(status: 502), "\(identifier) sent a _changes line longer than \(Self.maximumLineLength) bytes")
                return false
            }
            var start = state.partialLine.startIndex
            defer { state.partialLine.removeSubrange(..<start) }
            while let newline = state.partialLine[start...].firstIndex(of: UInt8(ascii: "\n")) {
                let line = String(decoding: state.partialLine[start..<newline], as: UTF8.self).trimmingCharacters(
                    in: .whitespacesAndNewlines)
                start = newline + 1
                guard !line.isEmpty else {
                    state.isConfirmed = true  // a heartbeat
                    continue
                }
                do {
                    let row = try JSON.parse(line)
                    if row["results"] != nil {
                        throw Unsupported(reason: "a normal _changes body instead of a continuous feed")
                    } else if row["id"] == nil, let last = row["last_seq"] {
                        state.endSequence = last
                        return true
                    } else {
                        state.rows.append(try PeerChange(couchDBRow: row, from: identifier))
                        state.isConfirmed = true
                    }
                } catch let error as CouchetteError where error.code == .invalidParameter {
                    problem = Unsupported(reason: "a line that is not JSON: \(line.prefix(100))")
                    return false
                } catch {
                    problem = error
                    return false
                }
            }
            return false
        }
        if let problem {
            record(problem)
        } else if ended {
            close()  // the server ends the response itself
        }
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
