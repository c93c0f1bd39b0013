import Foundation

/// The thread a ``Database`` actor runs on.
///
/// Every LMDB write transaction of the database begins and commits on this one thread (LMDB ties a
/// write transaction to its thread), and the disk sync at each commit blocks this thread instead
/// of one of Swift's few cooperative threads. While it syncs, writers on the cooperative threads
/// keep queueing their writes, and the next commit takes them all at once (group commit).
final class WriterExecutor: SerialExecutor, @unchecked Sendable {
    // @unchecked: `jobs`, `isStopped` and `isStarted` are only touched while `condition` is
    // locked; the thread is the only consumer and runs one job at a time, as a serial executor must.
    private let condition = NSCondition()
    private var jobs: [UnownedJob] = []
    private var isStopped = false
    private var isStarted = false
    private let name: String

    /// The thread starts with the first job: a database opened only to read never starts one
    /// (creating and ending a thread was about a third of opening a database and reading a
    /// document).
    init(name: String) {
        self.name = name
    }

    /// Whether a job has been queued, so the thread runs (or ran).
    var hasStarted: Bool {
        condition.lock()
        defer { condition.unlock() }
        return isStarted
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        condition.lock()
        jobs.append(job)
        let start = !isStarted
        isStarted = true
        condition.signal()
        condition.unlock()
        if start {
            let thread = Thread { [self] in run() }
            thread.name = "couchette-writer-\(name)"
            thread.start()
        }
    }

    func asUnownedSerialExecutor() -> UnownedSerialExecutor {
        UnownedSerialExecutor(ordinary: self)
    }

    /// Lets the thread end once every job queued so far has run. Called when the database goes
    /// away, after which no job can be queued.
    func stop() {
        condition.lock()
        isStopped = true
        condition.signal()
        condition.unlock()
    }

    private func run() {
        while true {
            condition.lock()
            while jobs.isEmpty && !isStopped { condition.wait() }
            if jobs.isEmpty {
                condition.unlock()
                return
            }
            let batch = jobs
            jobs.removeAll(keepingCapacity: true)
            condition.unlock()
            for job in batch { job.runSynchronously(on: asUnownedSerialExecutor()) }
        }
    }
}
