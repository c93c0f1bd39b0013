#if canImport(Glibc)
import Glibc
#endif

/// Decides whether a commit should wait a moment for more writers to join it.
///
/// With several tasks saving at once, the writers that finished with one commit come back a few
/// microseconds apart; committing the first to arrive alone splits them over two syncs. When the
/// last commit showed concurrency (it carried several writes, or writes arrived while it synced),
/// the next commit waits — at most ``maximumWait`` — until as many writes as last time are
/// queued. A single sequential writer never waits: nothing arrives while its commits sync.
struct GroupCommitPacing {
    static let maximumWait: Duration = .microseconds(200)
    static let pollInterval: useconds_t = 20

    /// How many writes the next commit expects (1: no waiting).
    private(set) var expectedWriters = 1

    /// Records a finished commit: how many writes it carried and how many queued up meanwhile.
    mutating func committed(_ count: Int, arrivedMeanwhile: Int) {
        expectedWriters = arrivedMeanwhile > 0 || count > 1 ? max(count, arrivedMeanwhile + 1) : 1
    }

    /// Waits for queued writes until ``expectedWriters`` are there in all or the wait runs out;
    /// returns the writes gathered. Runs on the writer thread, which may block.
    func gatherStragglers(from core: DatabaseCore) -> [PendingWrite] {
        let deadline = ContinuousClock.now + Self.maximumWait
        var gathered: [PendingWrite] = []
        while ContinuousClock.now < deadline {
            usleep(Self.pollInterval)
            gathered += core.takeQueued()
            if gathered.count + 1 >= expectedWriters { break }
        }
        return gathered
    }
}
