import Foundation

/// The thread a ``Database`` actor runs on, and the writer thread of its group commits.
///
/// When several tasks write at once, their group commits run here (see ``WriteQueue``), so the
/// disk sync at each commit blocks this thread instead of one of Swift's few cooperative threads.
/// While it syncs, writers on the cooperative threads keep queueing their writes, and the next
/// commit takes them all at once (group commit). LMDB ties a write transaction to its thread: each
/// begins and commits within one call here.
///
/// Group commits run outside any job: ``requestDrain()`` has the thread call the drain given at
/// ``connect(drain:)`` between jobs, which commits one group of queued writes and resumes their
/// callers directly (their tasks never hop onto this thread). Drain passes and jobs take turns
/// while both wait: under saves that never stop, the actor's own calls (`close()` among them) still
/// run after the next commit, and a stream of jobs never holds back the commits either.
final class WriterExecutor: SerialExecutor, @unchecked Sendable {
    // @unchecked: `jobs`, `drain`, `drainRequested`, `isStopped`, `isStarted` and `lastEnqueued` are only touched
    // while `condition` is locked. The thread is the only consumer and runs one job or drain at a time, as a serial
    // executor must.
    private let condition = NSCondition()
    private var jobs: [UnownedJob] = []
    private var drainRequested = false
    /// One drain pass; returns whether to run another (writes remain queued).
    private var drain: (@Sendable () -> Bool)?
    private var isStopped = false
    private var isStarted = false
    private let name: String
    /// When the last job was queued (`CLOCK_MONOTONIC` nanoseconds).
    private var lastEnqueued: UInt64 = 0

    /// How long the thread keeps looking for the next job before it sleeps. A caller saving in a
    /// loop queues its next write some microseconds after its last one completed (its task is
    /// resumed on the cooperative pool and encodes the next document); a thread that has gone to
    /// sleep by then must be woken — a futex call by the caller and a wake-up of this thread,
    /// tens of microseconds on a virtual machine — on top of each sync.
    static let spinLimit: UInt64 = 100_000

    /// The thread starts with the first job: a database opened only to read never starts one
    /// (creating and ending a thread was about a third of opening a database and reading a
    /// document).
    init(name: String) {
        self.name = name
    }

    /// Sets what ``requestDrain()`` runs (``Database``'s init, before any write): one pass, which
    /// returns true to be run again once the jobs queued meanwhile have run.
    func connect(drain: @escaping @Sendable () -> Bool) {
        condition.lock()
        self.drain = drain
        condition.unlock()
    }

    /// Whether the thread runs: from the first job or drain request until it has been stopped and
    /// has run out of work.
    var hasStarted: Bool {
        condition.lock()
        defer { condition.unlock() }
        return isStarted
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        wake { jobs.append(job) }
    }

    /// Has the thread run the drain (once, however often it is asked before it gets to it).
    func requestDrain() {
        wake { drainRequested = true }
    }

    /// Records work (`add`, run with `condition` locked) and wakes the thread, starting it first
    /// if needed.
    private func wake(_ add: () -> Void) {
        let now = Self.monotonicNanoseconds()
        condition.lock()
        add()
        let start = !isStarted
        isStarted = true
        lastEnqueued = now
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

    /// Lets the thread end once every job queued so far has run. Called when the database is
    /// closed or goes away: a closed database kept alive by its caller holds no thread.
    func stop() {
        condition.lock()
        isStopped = true
        condition.signal()
        condition.unlock()
    }

    private func run() {
        /// Whether the previous job came soon enough after the thread ran out of work that waiting
        /// for the next one without sleeping would have caught it: only then does it spin.
        var nextJobCameSoon = true
        /// Whether the last drain pass asked for another one (recorded at the next lock).
        var drainAgain = false
        /// Whether a drain pass ran last: when jobs wait too, they have the next turn.
        var drainedLast = false
        while true {
            condition.lock()
            if drainAgain {
                drainRequested = true
                drainAgain = false
            }
            if jobs.isEmpty && !drainRequested && !isStopped {
                let idleSince = Self.monotonicNanoseconds()
                if nextJobCameSoon {
                    while jobs.isEmpty && !drainRequested && !isStopped && Self.monotonicNanoseconds() - idleSince < Self.spinLimit {
                        condition.unlock()
                        sched_yield()
                        condition.lock()
                    }
                }
                while jobs.isEmpty && !drainRequested && !isStopped { condition.wait() }
                nextJobCameSoon = lastEnqueued &- idleSince < Self.spinLimit
            }
            // Turns: a drain pass commits one group, then the jobs queued by then run (a
            // snapshot: jobs they queue wait for the next turn), then the next pass.
            if drainRequested && (jobs.isEmpty || !drainedLast) {
                drainRequested = false
                drainedLast = true
                let drain = self.drain
                condition.unlock()
                drainAgain = drain?() ?? false
                continue
            }
            drainedLast = false
            if jobs.isEmpty {
                // Stopped and idle: the thread ends. A job queued later (a call on a closed
                // database, which fails at once) starts a new one, so it never waits forever.
                isStarted = false
                condition.unlock()
                return
            }
            let batch = jobs
            jobs.removeAll(keepingCapacity: true)
            condition.unlock()
            for job in batch { job.runSynchronously(on: asUnownedSerialExecutor()) }
        }
    }

    private static func monotonicNanoseconds() -> UInt64 {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
    }
}
