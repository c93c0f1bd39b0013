/// Decides whether a commit should wait a moment for more writers to join it.
///
/// With several tasks saving at once, the writers released by one commit come back some
/// microseconds apart (each resumes on the cooperative pool and encodes its next document first);
/// committing the first to arrive alone splits them over two syncs. When the last commit showed
/// concurrency (it carried several writes, or writes arrived while it synced), the next commit
/// waits until as many writes as last time are queued — at most as long as the last commit took
/// (within ``minimumWait`` and ``maximumWait``), since a straggler that misses the commit waits
/// a whole commit anyway. A single sequential writer never waits: nothing arrives while its
/// commits sync.
struct GroupCommitPacing {
    static let minimumWait: Duration = .microseconds(200)
    static let maximumWait: Duration = .milliseconds(2)

    /// How many writes the next commit expects (1: no waiting).
    private(set) var expectedWriters = 1
    /// How long the next commit may wait for them.
    private(set) var wait = minimumWait

    /// Records a finished commit: how many writes it carried, how many queued up meanwhile, and
    /// how long it took from taking its writes to completing them.
    mutating func committed(_ count: Int, arrivedMeanwhile: Int, took duration: Duration) {
        expectedWriters = arrivedMeanwhile > 0 || count > 1 ? max(count, arrivedMeanwhile + 1) : 1
        wait = min(max(duration, Self.minimumWait), Self.maximumWait)
    }

    /// Waits for queued writes until ``expectedWriters`` are there in all (`having` are taken
    /// already) or the wait runs out; returns the writes gathered. Runs on the writer thread,
    /// which may block.
    func gatherStragglers(from queue: WriteQueue, having: Int) -> [PendingWrite] {
        queue.take(atLeast: expectedWriters - having, waitingAtMost: wait)
    }
}
