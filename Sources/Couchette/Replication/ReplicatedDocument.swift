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
