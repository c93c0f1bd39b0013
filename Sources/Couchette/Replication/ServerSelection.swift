import Foundation

/// The servers of a ``URLEndpoint`` and the one in use, shared by every HTTP peer of one
/// ``Replicator``: its collections and directions move to another server together, and the
/// status names one server.
///
/// A peer sends each request to ``current``; when it cannot connect there it calls
/// ``failOver(from:)`` and tries the next. Several peers failing at once move the selection
/// once: a failure reported for a server no longer in use is ignored.
final class ServerSelection: Sendable {
    private struct State {
        var current = 0
        /// The server the status names (the last one that answered), if any.
        var shown: Int?
    }

    /// The endpoint's URLs, in order of preference.
    let urls: [URL]
    private let state = Locked(State())
    /// Told the URL (without credentials) of a server that answered when it is not the one shown.
    private let onAnswer = Locked<(@Sendable (URL) -> Void)?>(nil)

    init(urls: [URL]) {
        self.urls = urls
    }

    /// Calls `observer` with the URL (without credentials) of each server that answers when the
    /// previous answer came from another one (or none did yet).
    func observe(_ observer: @escaping @Sendable (URL) -> Void) {
        onAnswer.withLock { $0 = observer }
    }

    /// The index of the server in use.
    var current: Int { state.withLock { $0.current } }

    /// Moves to the server after `failed` (wrapping around), unless another peer already moved.
    func failOver(from failed: Int) {
        state.withLock { state in
            if state.current == failed { state.current = (failed + 1) % urls.count }
        }
    }

    /// Server `index` answered: it is the one in use (a probe may find another than ``current``).
    func answered(_ index: Int) {
        let observer = onAnswer.withLock { $0 }
        state.withLock { state in
            state.current = index
            guard state.shown != index else { return }
            state.shown = index
            // Inside the lock, so that the status shows answers in the order they were taken.
            observer?(Self.redacted(urls[index]))
        }
    }

    /// A new run starts again from the first server.
    func restart() {
        state.withLock { $0 = State() }
    }

    /// `url` without user and password.
    static func redacted(_ url: URL) -> URL {
        guard var components = URLComponents(url: url, resolvingAgainstBaseURL: false),
            components.user != nil || components.password != nil
        else { return url }
        components.user = nil
        components.password = nil
        return components.url ?? url
    }
}
