/// Told about each write transaction around its commit, on the writer thread: how a monitor of
/// other processes' commits (``ExternalChanges``) learns which commits are this instance's own,
/// without the writer knowing it by name. Registered with ``CommitObservers/add(transactionObserver:)``.
///
/// Calls must only record and return: they run inside the writer's transaction or compaction.
protocol TransactionObserver: AnyObject, Sendable {
    /// Inside the write transaction `transactionID`, just before it commits: what it wrote.
    func willCommit(transactionID: UInt64, _ writes: OwnWrites)
    /// The commit of `transactionID` failed (LMDB reuses the id).
    func commitFailed(transactionID: UInt64)
    /// The file is about to be rewritten by compaction (transaction ids start over).
    func willCompact()
    /// Compaction finished (or failed).
    func didCompact()
}
