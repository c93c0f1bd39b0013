/// A committed change to one document, delivered by ``Collection/documentChanges(for:)``.
///
/// ```swift
/// for await change in tasks.documentChanges(for: "task-1") {
///     let current = try await change.collection.document(id: change.documentID)
///     print(current?.toJSON() ?? "task-1 was deleted or purged")
/// }
/// ```
public struct DocumentChange: Sendable {
    /// The collection holding the document.
    public let collection: Collection
    /// The id of the document that changed (saved, deleted, purged or expired).
    public let documentID: String
}
