/// Documents one batch pushed or pulled, as ``Replicator/documentReplications()`` delivers them.
public struct DocumentReplication: Sendable {
    public let replicator: Replicator
    /// true for documents sent to the target, false for documents received.
    public let isPush: Bool
    public let documents: [ReplicatedDocument]
}
