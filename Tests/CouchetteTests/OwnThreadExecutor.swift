import Foundation

@testable import Couchette

/// Runs `body` on a thread of its own instead of the cooperative pool, staying in the calling
/// test's task (so `#expect` still reports to the test).
///
/// Why: Swift Testing starts every test at once on a pool as wide as the machine has cores (two
/// here), and a pool thread runs a job until it suspends. A test that computes for seconds
/// without suspending holds one of the two threads all that time, and the listener handlers,
/// replicators and feeds of other tests queue behind it. On a loaded machine that queue grew past
/// the HTTP client's 30 s idle limit ("no data sent or received for 30 s"). On a thread of its
/// own, the same work is time-sliced by the kernel instead, and the pool stays free for the jobs
/// that only need a moment.
///
/// ```swift
/// @Test func randomInputsMatch() async throws {
///     try await onAThreadOfItsOwn { try compareTenThousandRandomInputs() }
/// }
/// ```
func onAThreadOfItsOwn<T>(_ body: () async throws -> T) async rethrows -> T {
    let executor = OwnThreadExecutor()
    defer { executor.finish() }
    return try await withTaskExecutorPreference(executor, operation: body)
}

/// A task executor with one thread, which ends when ``finish()`` is called and its queue is run.
/// Jobs of default actors the body calls run here too (a task executor preference applies to
/// them); actors with executors of their own still run on those.
final class OwnThreadExecutor: TaskExecutor {
    private struct Queue {
        var jobs: [UnownedJob] = []
        var finished = false
    }
    /// `Locked` (a pthread mutex), not `Synchronization.Mutex`: under contention — the writer
    /// thread resuming a task here while this thread takes its jobs — Mutex hands the lock over
    /// inside the kernel (`FUTEX_LOCK_PI`), which ThreadSanitizer does not see, and reports the
    /// accesses it guards as a race.
    private let queue = Locked(Queue())
    private let wake = DispatchSemaphore(value: 0)

    /// Starts the thread, with the stack size of the pool's threads (recursive code in tests
    /// must fit as it does there).
    init() {
        let thread = Thread { [self] in run() }
        thread.stackSize = 8 << 20
        thread.start()
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        queue.withLock { $0.jobs.append(job) }
        wake.signal()
    }

    /// Ends the thread once the jobs queued so far have run.
    func finish() {
        queue.withLock { $0.finished = true }
        wake.signal()
    }

    private func run() {
        while true {
            wake.wait()
            let (jobs, finished) = queue.withLock { queue in
                defer { queue.jobs.removeAll() }
                return (queue.jobs, queue.finished)
            }
            for job in jobs { job.runSynchronously(on: asUnownedTaskExecutor()) }
            if finished { return }
        }
    }
}
