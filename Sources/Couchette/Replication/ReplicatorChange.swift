/// One status change of a ``Replicator``, as ``Replicator/changes()`` delivers it.
public struct ReplicatorChange: Sendable {
    public let replicator: Replicator
    public let status: Replicator.Status
}

/// Documents one batch pushed or pulled, as ``Replicator/documentReplications()`` delivers them.
public struct DocumentReplication: Sendable {
    public let replicator: Replicator
    /// true for documents sent to the target, false for documents received.
    public let isPush: Bool
    public let documents: [ReplicatedDocument]
}

/// One document replicated (or failed to replicate) in a ``DocumentReplication``.
public struct ReplicatedDocument: Sendable {
    public let id: String
    public let scope: String
    public let collection: String
    /// `.deleted` when a deletion was replicated.
    public let flags: DocumentFlags
    /// Why this document did not replicate, or nil when it did.
    public let error: (any Error)?
}
