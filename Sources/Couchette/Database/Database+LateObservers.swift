extension Database {
    /// What a commit that collected no ids (nobody observed commits when it began) changed, for
    /// the observers that registered while it ran, read back from the sequences it assigned.
    ///
    /// Such an observer may have read the store before the commit was visible and now wait for
    /// its event: a `_changes` long poll subscribes, reads, then waits, and without this event it
    /// waited until its timeout (the listener's continuous feed: a heartbeat, 30 s, late). The
    /// ids come from this commit's own `sequences` entries (a document a later commit rewrote
    /// has moved on and is named by that commit). Purges leave no entry: a collection with one
    /// is marked changed beyond the ids listed (``CommitSummary/touch(_:)``).
    nonisolated func summaryForLateObservers(_ writes: OwnWrites, catalog: [UInt32: CollectionSpec]) throws -> CommitSummary {
        var summary = CommitSummary()
        try core.read { txn in
            for (number, ranges) in writes.sequences {
                guard let spec = catalog[number] else { continue }
                for range in ranges {
                    try core.store.forEachChange(txn, spec, after: range.lowerBound - 1, through: range.upperBound) { _, id, _ in
                        summary.record(spec, id)
                        return true
                    }
                }
            }
            for (number, purged) in writes.purges where purged > 0 {
                if let spec = catalog[number] { summary.touch(spec) }
            }
        }
        return summary
    }
}
