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
