/// One committed transaction's changes to a collection, delivered by ``Collection/changes()``.
///
/// A batch that saved ten documents is one `CollectionChange` with ten ids. Saves, deletions,
/// purges and expiration purges all count.
///
/// ```swift
/// for await change in tasks.changes() {
///     print("\(change.documentIDs.count) task(s) changed in \(change.collection.fullName)")
/// }
/// ```
public struct CollectionChange: Sendable {
    /// The collection that changed.
    public let collection: Collection
    /// The ids of the changed documents, each once, in the order the transaction wrote them.
    /// When a slow consumer's events were merged, the ids of all merged commits in commit order.
    public let documentIDs: [String]

    /// Adds the ids of a later change that are not already listed.
    mutating func merge(_ later: CollectionChange) {
        var seen = Set(documentIDs)
        var ids = documentIDs
        for id in later.documentIDs where seen.insert(id).inserted { ids.append(id) }
        self = CollectionChange(collection: collection, documentIDs: ids)
    }
}
