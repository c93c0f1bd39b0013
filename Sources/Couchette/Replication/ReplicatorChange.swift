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

/// One document replicated (or failed to replicate) in a ``DocumentReplication``.
///
/// ```swift
/// if document.flags.contains(.deleted) { print("\(document.collection): \(document.id) deleted") }
/// ```
public struct ReplicatedDocument: Sendable {
    /// The document's id.
    public let id: String
    /// The name of the local collection's scope.
    public let scope: String
    /// The name of the local collection.
    public let collection: String
    /// `.deleted` when a deletion was replicated.
    public let flags: DocumentFlags
    /// Why this document did not replicate, or nil when it did.
    public let error: (any Error)?
}
