@testable import Couchette

/// Counts what a database's live queries do, through the observer seam the registry offers
/// (``LiveQueryActivityObserver``): evaluations run and re-runs skipped.
final class LiveQueryActivityCounter: LiveQueryActivityObserver {
    private let state = Locked((evaluations: 0, skipped: 0))
    private let incremental = Locked(0)

    /// A counter registered with `database`'s live queries before any of them runs.
    static func attached(to database: Database) -> LiveQueryActivityCounter {
        let counter = LiveQueryActivityCounter()
        _ = database.observation.liveQueries.add(activityObserver: counter)
        return counter
    }

    var counts: (evaluations: Int, skipped: Int) { state.withLock { $0 } }
    /// How many of the evaluations re-read only the changed documents.
    var incrementalEvaluations: Int { incremental.withLock { $0 } }

    func liveQueryEvaluated(_ text: String, incrementally: Bool) {
        state.withLock { $0.evaluations += 1 }
        if incrementally { incremental.withLock { $0 += 1 } }
    }
    func liveQuerySkippedEvaluation(_ text: String) { state.withLock { $0.skipped += 1 } }
}
