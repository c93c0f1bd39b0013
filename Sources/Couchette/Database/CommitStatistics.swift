import Synchronization

/// How many group commits the writer made and how many pending writes they carried: what tells
/// whether group commit fills its groups (the benchmark prints writes per commit).
final class CommitStatistics: Sendable {
    private let commits = Atomic<Int>(0)
    private let writes = Atomic<Int>(0)

    /// Counts one committed transaction carrying `count` pending writes.
    func recordCommit(carrying count: Int) {
        commits.add(1, ordering: .relaxed)
        writes.add(count, ordering: .relaxed)
    }

    /// Commits so far, and the pending writes they carried.
    var totals: (commits: Int, writes: Int) {
        (commits.load(ordering: .relaxed), writes.load(ordering: .relaxed))
    }
}

extension Database {
    /// How many transactions the writer has committed since this instance opened, and how many
    /// pending writes (saves, deletes, batches) they carried: for the benchmark's
    /// writes-per-commit figure, not an application API.
    @_spi(Benchmarks)
    public nonisolated var commitTotals: (commits: Int, writes: Int) { statistics.totals }
}
