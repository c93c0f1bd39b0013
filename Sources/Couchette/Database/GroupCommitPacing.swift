/// Decides whether a commit should wait a moment for more writers to join it.
///
/// With several tasks saving at once, the writers released by one commit come back some
/// microseconds apart (each resumes on the cooperative pool and encodes its next document first);
/// committing the first to arrive alone splits them over two syncs. When the last commit showed
/// concurrency (it carried several writes, or writes arrived while it synced), the next commit
/// takes writes until as many as last time are there — at most as long as the last commit took
/// (within ``DatabaseConfiguration/groupCommitWait``), since a straggler that misses the commit
/// waits a whole commit anyway; it gathers them with its transaction open
/// (``StragglerGathering``). A single sequential writer never waits: nothing arrives while its
/// commits sync.
struct GroupCommitPacing {
    /// ``DatabaseConfiguration/groupCommitWait``'s default.
    static let defaultWait: ClosedRange<Duration> = .microseconds(200) ... .milliseconds(2)
    /// The longest wait a configuration may ask for: every wait has a limit.
    static let longestWait: Duration = .seconds(60)

    /// The bounds of every wait.
    let limits: ClosedRange<Duration>
    /// How many writes the next commit expects (1: no waiting).
    private(set) var expectedWriters = 1
    /// How long the next commit may wait for them.
    private(set) var wait: Duration

    init(limits: ClosedRange<Duration> = defaultWait) {
        self.limits = limits
        wait = limits.lowerBound
    }

    /// Throws `.invalidParameter` unless `limits` are waits this type accepts (0 to 60 s).
    static func validate(_ limits: ClosedRange<Duration>) throws {
        guard limits.lowerBound >= .zero, limits.upperBound <= longestWait else {
            throw CouchetteError(.invalidParameter, "groupCommitWait must lie within 0 and 60 s, got \(limits)")
        }
    }

    /// Records a finished commit: how many writes it carried, how many queued up meanwhile, and
    /// how long it took from taking its writes to completing them.
    mutating func committed(_ count: Int, arrivedMeanwhile: Int, took duration: Duration) {
        expectedWriters = arrivedMeanwhile > 0 || count > 1 ? max(count, arrivedMeanwhile + 1) : 1
        wait = min(max(duration, limits.lowerBound), limits.upperBound)
    }

    /// The writers the next commit waits for, having taken `having` writes already; nil when it
    /// waits for none (or may not wait at all).
    func stragglers(from queue: WriteQueue, having: Int) -> StragglerGathering? {
        guard expectedWriters > having, wait > .zero else { return nil }
        return StragglerGathering(queue: queue, missing: expectedWriters - having, wait: wait)
    }
}

/// Takes the writes that join a commit while its transaction is open: the writer applies the
/// writes it has (usually the first caller's) before it sleeps until the others are there,
/// instead of applying all of them after the last one arrived. Runs on the writer thread, which
/// may block.
struct StragglerGathering {
    private let queue: WriteQueue
    private var missing: Int
    private let deadline: ContinuousClock.Instant

    init(queue: WriteQueue, missing: Int, wait: Duration) {
        self.queue = queue
        self.missing = missing
        deadline = .now + wait
    }

    /// Blocks until the missing writes are queued or the wait runs out, and takes what is
    /// queued; nil once all came, or the wait ran out. One wake-up per group: waking the writer
    /// for part of a group cost more on a loaded machine (a woken thread waits for a core) than
    /// applying that part early saved.
    mutating func next() -> [PendingWrite]? {
        let remaining = deadline - .now
        guard missing > 0, remaining > .zero else { return nil }
        let taken = queue.take(atLeast: missing, waitingAtMost: remaining)
        guard !taken.isEmpty else { return nil }
        missing -= taken.count
        return taken
    }
}

/// A commit's gathering of stragglers (``StragglerGathering``, nil: none expected), and when its
/// group was complete: the commit's duration, which paces the next one, counts from then.
struct GroupGathering {
    private var stragglers: StragglerGathering?
    /// When the last straggler joined, or the gathering was made when none was expected.
    private(set) var completed = ContinuousClock.now

    init(stragglers: StragglerGathering?) {
        self.stragglers = stragglers
    }

    /// The writes that joined since the last call; nil once the group is complete or the wait ran
    /// out, and from then on.
    mutating func more() -> [PendingWrite]? {
        guard stragglers != nil else { return nil }
        if let more = stragglers?.next() { return more }
        stragglers = nil
        completed = .now
        return nil
    }
}

/// When a caller that commits its own writes on its own thread (``WriteQueue/Admission/commitHere``)
/// gives that thread up for a moment (`Task.yield()`, see ``Database/submit(_:)``).
///
/// A task saving in a loop that commits alone never suspends otherwise, so it would keep its pool
/// thread from every other task queued on it for as long as its saves go on. Yielding after every
/// commit cost a lone save about 5.7k instructions, two futex calls and two context switches (a
/// tenth of its CPU); yielding once a turn of at least ``slice`` and ``minimumCommits`` own
/// commits has passed keeps the thread shared — other tasks wait at most about a millisecond, or
/// a few commits on a slow disk — at a fraction of the cost. While it yields, the caller stays in
/// flight, so a saver that runs then queues for the writer thread (group commit).
struct OwnCommitTurns {
    /// How long a caller may commit back to back before it yields.
    static let slice: Duration = .milliseconds(1)
    /// The fewest own commits between two yields: on a disk slower than ``slice`` per commit, a
    /// yield for every commit would cost a lone save its CPU again for no one's benefit but the
    /// tasks that wait a few commits at most.
    static let minimumCommits = 4

    /// Own commits since the turn began.
    private var commits = 0
    /// When the turn began: the end of its first commit (nil: no turn under way).
    private var start: ContinuousClock.Instant?

    /// Records an own commit that ended at `end`; true when its caller should yield now, which
    /// ends the turn.
    mutating func committed(endingAt end: ContinuousClock.Instant) -> Bool {
        commits += 1
        guard let start else {
            start = end
            return false
        }
        guard commits >= Self.minimumCommits, end - start >= Self.slice else { return false }
        endTurn()
        return true
    }

    /// Ends the turn under way: the next own commit starts a new one.
    mutating func endTurn() {
        commits = 0
        start = nil
    }
}
