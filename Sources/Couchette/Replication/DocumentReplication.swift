/// Documents one batch pushed or pulled, as ``Replicator/documentReplications()`` delivers them.
///
/// ```swift
/// for await replication in replicator.documentReplications() {
///     for document in replication.documents where document.error != nil {
///         print(replication.isPush ? "push" : "pull", document.id, document.error!)
///     }
/// }
/// ```
public struct DocumentReplication: Sendable {
    /// The replicator that moved the documents.
    public let replicator: Replicator
    /// true for documents sent to the target, false for documents received.
    public let isPush: Bool
    /// The documents of one batch, those that replicated and those that failed (see
    /// ``ReplicatedDocument/error``).
    public let documents: [ReplicatedDocument]
}
