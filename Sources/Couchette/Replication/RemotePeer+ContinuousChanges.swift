import Foundation

/// Continuous replication reads one `feed=continuous` `_changes` stream instead of a long poll
/// per wait: changes arrive as the server sends them, on one connection, with heartbeats.
extension RemotePeer {
    /// The next changes after `since` from the open feed (opened at `since` when there is none,
    /// or when the replication moved elsewhere), or nil when the caller should long-poll instead:
    /// the server cannot stream (remembered: long polls from then on), or the feed broke — the
    /// long poll then reports the server's state (unreachable → `.io`) or recovers.
    /// - Throws: `.unauthorized`, `.http` (404, 5xx) from the server; `CancellationError`.
    func continuousChanges(since: Value?, limit: Int, timeout: Duration) async throws -> PeerChanges? {
        guard streamsChanges.withLock({ $0 }) else { return nil }
        for attempt in 0..<2 {
            let current = feed.withLock { open in
                // A feed on a server no longer in use (another request failed over) is left.
                let server = selection.current
                if let open, open.server == server, open.feed.seek(to: since) { return open.feed }
                open?.feed.close()
                let opened = openFeed(since: since, heartbeat: Self.heartbeat(for: timeout), on: server)
                open = (opened, server)
                return opened
            }
            do {
                switch try await current.next(limit: limit, timeout: timeout) {
                case .changes(let page):
                    return page
                case .quiet:
                    return PeerChanges(results: [], lastSequence: since ?? .int(0))
                case .ended(let lastSequence):
                    drop(current)
                    return PeerChanges(results: [], lastSequence: lastSequence)
                case .closed:
                    drop(current)
                    if attempt == 1 { return nil }  // closed again at once: let a long poll find out why
                }
            } catch is ContinuousChangesFeed.Unsupported {
                drop(current)
                streamsChanges.withLock { $0 = false }
                return nil
            } catch let error as CouchetteError where error.code != .io {
                drop(current)
                throw error
            } catch {
                drop(current)
                if error is CancellationError { throw error }
                return nil
            }
        }
        return nil
    }

    func closeStreams() {
        feed.withLock { open in
            open?.feed.close()
            open = nil
        }
    }

    /// Heartbeats at half the caller's wait (0.5 to 30 s): often enough to notice a dead
    /// connection within a wait or two.
    static func heartbeat(for wait: Duration) -> Duration {
        min(max(wait / 2, .milliseconds(500)), .seconds(30))
    }

    private func openFeed(since: Value?, heartbeat: Duration, on server: Int) -> ContinuousChangesFeed {
        var query = [("feed", "continuous"), ("style", "all_docs"), ("heartbeat", String(CurlTransfer.milliseconds(heartbeat)))]
        if let since { query.append(("since", RemotePeer.queryText(since))) }
        return ContinuousChangesFeed(
            client: client, url: url("/_changes", query: query, on: server),
            headers: requestHeaders(on: server), since: since, heartbeat: heartbeat,
            identifier: servers[server].base)
    }

    /// Closes `feed` and forgets it, unless another call already replaced it.
    private func drop(_ closing: ContinuousChangesFeed) {
        closing.close()
        feed.withLock { if $0?.feed === closing { $0 = nil } }
    }
}
