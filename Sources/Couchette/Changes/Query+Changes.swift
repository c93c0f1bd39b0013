extension Query {
    /// A live query: the current results now, then the new results each time a commit changes them.
    ///
    /// The stream's first ``QueryChange`` holds the results at subscription, also when there are
    /// none. After that, every committed transaction touching a collection the query reads (its
    /// FROM and JOIN collections) re-runs the query in the background, in its own snapshot
    /// (writes never wait for it), and an event is delivered when the results differ from the
    /// previous ones; commits that leave them equal give no event. Assigning ``parameters``
    /// always re-runs the query and emits. Each event carries the complete new ``ResultSet``.
    ///
    /// ```swift
    /// let query = try db.createQuery("SELECT meta().id AS id, title FROM tasks WHERE completed = false")
    /// for await change in query.changes() {
    ///     if let error = change.error { print("failed: \(error)"); break }
    ///     for row in change.results! { print(row.string(forKey: "title") ?? "") }
    /// }
    /// ```
    ///
    /// The observer is registered before this returns: a commit made after the call is reflected
    /// in the initial event or in a later one, never missed. Commits arriving while the query is
    /// being evaluated are coalesced into one more evaluation, so one event may reflect several
    /// commits; events always come in commit order. A consumer more than 64 events behind skips
    /// intermediate results and gets the newest. Errors (a missing parameter, a deleted
    /// collection) arrive in ``QueryChange/error`` and do not end the stream. The stream ends when
    /// the database closes, and is already ended when it is closed at the call. Commits made by
    /// other processes that opened the same database file are not observed.
    ///
    /// - Returns: A stream of ``QueryChange``s for one consumer; each consumer should call
    ///   `changes()` itself (each stream evaluates the query on its own).
    public func changes() -> ChangeStream<QueryChange> {
        let buffer = ChangeBuffer<QueryChange> { queued, newer in queued = newer }
        let live = LiveQuery(query: self, buffer: buffer)
        let parameterToken = parameterObservers.add { live.parametersChanged() }
        let parameterObservers = self.parameterObservers
        let stream = core.changeStream(buffer: buffer, onEnd: {
            live.end()
            parameterObservers.remove(parameterToken)
        }, onCommit: { summary in
            if live.isAffected(by: summary) { live.commitTouched() }
        })
        live.start()
        return stream
    }
}
