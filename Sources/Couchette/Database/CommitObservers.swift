
/// Callbacks run after every commit and when the database closes: the hook change feeds use.
///
/// Observers run synchronously on the committing thread, in commit order, so they must only hand
/// the summary on (for example into a stream's buffer) and return.
final class CommitObservers: Sendable {
    typealias Observer = @Sendable (CommitSummary) -> Void
    typealias CloseObserver = @Sendable () -> Void

    private struct State {
        var nextToken = 0
        var observers: [Int: Observer] = [:]
        var closeObservers: [Int: CloseObserver] = [:]
    }

    private let state = Locked(State())

    /// Registers `observer` (and optionally what to do at close); returns a token for ``remove(_:)``.
    /// A nil `observer` registers only `onClose`, which ``count`` does not include.
    func add(_ observer: Observer?, onClose: CloseObserver? = nil) -> Int {
        state.withLock { state in
            state.nextToken += 1
            state.observers[state.nextToken] = observer
            state.closeObservers[state.nextToken] = onClose
            return state.nextToken
        }
    }

    func remove(_ token: Int) {
        state.withLock { state in
            state.observers[token] = nil
            state.closeObservers[token] = nil
        }
    }

    /// How many commit observers are registered (close-only registrations are not counted).
    var count: Int { state.withLock { $0.observers.count } }

    func publish(_ summary: CommitSummary) {
        guard !summary.isEmpty else { return }
        let observers = state.withLock { $0.observers.sorted { $0.key < $1.key }.map(\.value) }
        for observer in observers { observer(summary) }
    }

    /// Calls every close observer once and forgets all observers.
    func close() {
        let closers = state.withLock { state in
            defer { state = State(nextToken: state.nextToken) }
            return Array(state.closeObservers.values)
        }
        for closer in closers { closer() }
    }
}
