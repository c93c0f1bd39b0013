extension Collection {
    /// The changes committed to this collection from now on, one event per transaction.
    ///
    /// The observer is registered before this returns, so no commit made after the call is
    /// missed; there is no initial event. Each committed transaction that touched the collection
    /// gives one ``CollectionChange`` listing every changed document id (a 10-document batch
    /// gives one event with 10 ids), in commit order. Saves, deletions, purges and expiration
    /// purges count; commits to other collections do not.
    ///
    /// ```swift
    /// let tasks = try await db.createCollection(name: "tasks")
    /// let changes = tasks.changes()
    /// try await tasks.save(document: MutableDocument(id: "task-1"))
    /// for await change in changes {
    ///     print(change.documentIDs)      // ["task-1"]
    ///     break                          // ends the stream and unregisters it
    /// }
    /// ```
    ///
    /// The stream ends when the database is closed (it is empty and already ended when the
    /// database is closed at the call). A consumer more than 64 events behind gets further
    /// commits merged into one event holding the union of their ids (see ``ChangeStream``).
    /// Commits made by other processes (or another `Database` instance) on the same file are
    /// reported too, within about 20 ms: their saves and deletions with their ids, several such
    /// commits possibly in one event; their purges leave no ids behind and give no event.
    ///
    /// - Returns: A stream of ``CollectionChange``s for one consumer.
    public func changes() -> ChangeStream<CollectionChange> {
        let spec = self.spec
        let collection = self
        return database.observation.changeStream(merge: { $0.merge($1) }) { summary in
            guard let ids = summary.documentIDs[spec], !ids.isEmpty else { return nil }
            return CollectionChange(collection: collection, documentIDs: ids)
        }
    }

    /// The changes committed to one document from now on, one event per transaction touching it.
    ///
    /// Registered before this returns, like ``changes()``; no initial event. Saving, deleting,
    /// purging or expiring the document each give a ``DocumentChange``; the document need not
    /// exist yet. A consumer more than 64 events behind gets further changes merged into one.
    ///
    /// ```swift
    /// let changes = tasks.documentChanges(for: "task-1")
    /// Task {
    ///     for await change in changes {
    ///         let now = try await tasks.document(id: change.documentID)
    ///         print(now?.string(forKey: "title") ?? "deleted")
    ///     }
    /// }
    /// ```
    ///
    /// - Parameter id: The document id to watch.
    /// - Returns: A stream of ``DocumentChange``s for one consumer; it ends when the database closes.
    public func documentChanges(for id: String) -> ChangeStream<DocumentChange> {
        let spec = self.spec
        let change = DocumentChange(collection: self, documentID: id)
        return database.observation.changeStream(merge: { _, _ in }) { summary in
            guard let ids = summary.documentIDs[spec], ids.contains(id) else { return nil }
            return change
        }
    }
}
