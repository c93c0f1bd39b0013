/// One status change of a ``Replicator``, as ``Replicator/changes()`` delivers it.
///
/// ```swift
/// for await change in replicator.changes() {
///     print(change.status.activity, change.status.progress.completed)
/// }
/// ```
public struct ReplicatorChange: Sendable {
    /// The replicator whose status changed.
    public let replicator: Replicator
    /// The new status.
    public let status: Replicator.Status
}
