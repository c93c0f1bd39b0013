/// One status change of a ``Replicator``, as ``Replicator/changes()`` delivers it.
public struct ReplicatorChange: Sendable {
    public let replicator: Replicator
    public let status: Replicator.Status
}
