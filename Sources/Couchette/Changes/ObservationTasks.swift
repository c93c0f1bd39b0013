/// The database's observation task group: live-query evaluations run as its child tasks.
///
/// Commit observers run on the writer thread and must not evaluate queries there, so they hand
/// the work over with ``submit(_:)``. Rather than each evaluation being a free-floating task, they
/// are children of one task group per database, started with the first submission: they run in
/// parallel on the cooperative pool, and `Database.close()` ends the group with ``close()`` —
/// no evaluation starts afterwards, and running ones are cancelled.
///
/// ```swift
/// observation.tasks.submit { liveQuery.run() }
/// ```
final class ObservationTasks: Sendable {
    typealias Job = @Sendable () -> Void

    private struct State {
        var jobs: AsyncStream<Job>.Continuation?
        var group: Task<Void, Never>?
        var isClosed = false
    }

    private let state = Locked(State())

    /// Runs `job` in a child task of the group; false (and nothing runs) once closed.
    @discardableResult
    func submit(_ job: @escaping Job) -> Bool {
        let jobs = state.withLock { state -> AsyncStream<Job>.Continuation? in
            guard !state.isClosed else { return nil }
            if state.jobs == nil {
                let (stream, continuation) = AsyncStream.makeStream(of: Job.self)
                state.jobs = continuation
                // High priority: the group is fed from the writer thread, not from a task, so it
                // inherits nothing; at the default priority a busy pool (2 threads here) left
                // evaluations queued behind every other task for seconds.
                state.group = Task.detached(priority: .high) {
                    await withDiscardingTaskGroup { group in
                        for await job in stream { group.addTask { job() } }
                    }
                }
            }
            return state.jobs
        }
        guard let jobs, case .enqueued = jobs.yield(job) else { return false }
        return true
    }

    /// Ends the group: no job starts afterwards; running ones see `Task.isCancelled`.
    func close() {
        let (jobs, group) = state.withLock { state in
            state.isClosed = true
            defer { state.jobs = nil; state.group = nil }
            return (state.jobs, state.group)
        }
        jobs?.finish()
        group?.cancel()
    }
}
