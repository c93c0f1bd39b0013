import Synchronization

/// Callbacks run after every commit and when the database closes: the hook change feeds use.
///
/// Observers run synchronously on the committing thread, in commit order, so they must only hand
/// the summary on (for example into a stream's buffer) and return.
final class CommitObservers: Sendable {
    typealias Observer = @Sendable (CommitSummary) -> Void
    typealias CloseObserver = @Sendable () -> Void

    private struct State {
        var nextToken = 0
        /// In registration (token) order, the order they are called in.
        var observers: [(token: Int, observer: Observer)] = []
        var closeObservers: [Int: CloseObserver] = [:]
    }

    private let state = Locked(State())
    /// `state.observers.count`, stored whenever it changes (with `state` locked): every commit
    /// asks it once or twice, which a lock made two lock-unlock pairs a commit. The releasing
    /// store and acquiring load order it as the lock did: an observer counted here is registered.
    private let observerCount = Atomic<Int>(0)
    /// Held weakly: an observer (the cross-process monitor) holds the database's reader, which
    /// holds these observers; its owner (``DatabaseObservation``) keeps it alive.
    private let transactionObservers = Locked<[WeakTransactionObserver]>([])

    private struct WeakTransactionObserver: Sendable {
        weak var observer: (any TransactionObserver)?
    }

    /// Registers `observer` (and optionally what to do at close); returns a token for ``remove(_:)``.
    /// A nil `observer` registers only `onClose`, which ``count`` does not include.
    func add(_ observer: Observer?, onClose: CloseObserver? = nil) -> Int {
        state.withLock { state in
            state.nextToken += 1
            if let observer {
                state.observers.append((state.nextToken, observer))
                observerCount.store(state.observers.count, ordering: .releasing)
            }
            state.closeObservers[state.nextToken] = onClose
            return state.nextToken
        }
    }

    func remove(_ token: Int) {
        state.withLock { state in
            state.observers.removeAll { $0.token == token }
            observerCount.store(state.observers.count, ordering: .releasing)
            state.closeObservers[token] = nil
        }
    }

    /// Registers `observer` for the life of the database (see ``TransactionObserver``).
    func add(transactionObserver observer: any TransactionObserver) {
        transactionObservers.withLock { observers in
            observers.removeAll { $0.observer == nil }
            observers.append(WeakTransactionObserver(observer: observer))
        }
    }

    /// Calls `body` with each ``TransactionObserver``: the writer's side of that protocol.
    func forEachTransactionObserver(_ body: (any TransactionObserver) -> Void) {
        for entry in transactionObservers.withLock({ $0 }) {
            if let observer = entry.observer { body(observer) }
        }
    }

    /// How many commit observers are registered (close-only registrations are not counted).
    var count: Int { observerCount.load(ordering: .acquiring) }

    func publish(_ summary: CommitSummary) {
        guard !summary.isEmpty else { return }
        let observers = state.withLock { $0.observers }
        for entry in observers { entry.observer(summary) }
    }

    /// Calls every close observer once and forgets all observers.
    func close() {
        let closers = state.withLock { state in
            defer {
                state = State(nextToken: state.nextToken)
                observerCount.store(0, ordering: .releasing)
            }
            return Array(state.closeObservers.values)
        }
        for closer in closers { closer() }
    }
}
