/// The scheduler behind one ``Query/changes()`` stream: re-runs the query after commits that
/// touched a collection it reads, and emits only when the results differ.
///
/// - The commit observer (on the writer thread) only marks the live query dirty and, when no
///   evaluation is running, starts one in a task. The writer never runs or waits for a query.
/// - At most one evaluation is in flight. Commits arriving during an evaluation mark it dirty
///   again, and the task loops once more: a burst of commits is coalesced into one re-run.
///   Several live queries evaluate in parallel, each in its own task, each in its own LMDB
///   snapshot, concurrently with writes.
/// - An evaluation emits when its results differ from the previous evaluation's (same columns,
///   same rows in the same order), when it is the first one, when `parameters` was assigned
///   since the previous one, or when it failed (the error is delivered in the event).
final class LiveQuery: Sendable {
    private struct State {
        var isRunning = false
        var isDirty = false
        /// The next evaluation emits even when its results equal the last ones (the initial event,
        /// a parameter change).
        var mustEmit = true
        var last: ResultSet?
        var hasEnded = false
    }

    let query: Query
    let buffer: ChangeBuffer<QueryChange>
    /// The collections the query reads (FROM and JOINs): commits touching others are ignored.
    let collections: Set<CollectionSpec>
    private let state = Locked(State())

    init(query: Query, buffer: ChangeBuffer<QueryChange>) {
        self.query = query
        self.buffer = buffer
        collections = Set(query.plan.sources.compactMap { source in
            if case .collection(let spec) = source.kind { return spec }
            return nil
        })
    }

    /// Whether a commit may change the results: it touched a collection the query reads.
    func isAffected(by summary: CommitSummary) -> Bool {
        summary.documentIDs.keys.contains { collections.contains($0) }
    }

    /// A commit touched the query's collections: re-run (coalesced with any running evaluation).
    func commitTouched() { schedule { $0.isDirty = true } }

    /// `parameters` was assigned: re-run and emit even if the results are equal.
    func parametersChanged() { schedule { $0.mustEmit = true } }

    /// Starts the initial evaluation.
    func start() { schedule { _ in } }

    /// The stream ended: no more evaluations start; a running one finishes and is discarded.
    func end() { state.withLock { $0.hasEnded = true; $0.last = nil } }

    private func schedule(_ update: (inout State) -> Void) {
        let start = state.withLock { state -> Bool in
            update(&state)
            guard !state.hasEnded, !state.isRunning else { return false }
            state.isRunning = true
            return true
        }
        if start {
            Task.detached { self.run() }
        }
    }

    /// Evaluates until nothing is pending. Runs in one task at a time (`isRunning`).
    private func run() {
        while true {
            let mustEmit = state.withLock { state -> Bool? in
                guard !state.hasEnded, state.isDirty || state.mustEmit else {
                    state.isRunning = false
                    return nil
                }
                defer { state.isDirty = false; state.mustEmit = false }
                return state.mustEmit
            }
            guard let mustEmit else { return }
            let change: QueryChange?
            do {
                let results = try query.executeNow()
                let changed = state.withLock { state -> Bool in
                    defer { state.last = results }
                    guard let last = state.last else { return true }
                    return mustEmit || !last.hasSameRows(as: results)
                }
                change = changed ? QueryChange(query: query, results: results, error: nil) : nil
            } catch {
                state.withLock { $0.last = nil }
                change = QueryChange(query: query, results: nil, error: error)
            }
            if let change { buffer.yield(change) }
        }
    }
}
