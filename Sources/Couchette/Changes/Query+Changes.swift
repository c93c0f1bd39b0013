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
    /// other processes that opened the same database file are observed too (within about 20 ms).
    ///
    /// ## When the query re-runs
    /// Only a commit that touched a collection the query reads (FROM and every JOIN) re-runs it;
    /// commits to other collections cost nothing. No finer test is made: a commit to a collection
    /// the query reads re-runs it even when the changed documents cannot match its WHERE clause,
    /// and an event is then delivered only if the results differ (same columns, same rows in the
    /// same order). Assigning ``parameters`` always re-runs the query (or reuses the current
    /// results of a live query with the new parameters) and emits.
    ///
    /// ## Shared evaluation
    /// Streams of queries with the same text and equal parameters on one database (from one
    /// `Query` or several) share one evaluation per commit and receive the same results; each
    /// event's ``QueryChange/query`` is the stream's own query. A stream created while such a
    /// live query is running receives its current results at once as its initial event.
    ///
    /// - Returns: A stream of ``QueryChange``s for one consumer; each consumer should call
    ///   `changes()` itself.
    public func changes() -> ChangeStream<QueryChange> {
        let buffer = ChangeBuffer<QueryChange> { queued, newer in queued = newer }
        guard let observation = database?.observation else {  // the database is gone, and closed
            buffer.finish()
            return ChangeStream(buffer: buffer)
        }
        let registry = observation.liveQueries
        // The parameter observer first: an assignment racing with `subscribe` is then either read
        // by it or moves the subscriber afterwards (both happen under the registry's lock).
        let id = Locked<Int?>(nil)
        let parameterToken = parameterObservers.add {
            if let id = id.withLock({ $0 }) { registry.parametersChanged(id) }
        }
        id.withLock { $0 = registry.subscribe(self, buffer: buffer) }
        let parameterObservers = self.parameterObservers
        // The shared live query observes commits; this stream only has to end at close.
        return observation.changeStream(
            buffer: buffer,
            onEnd: {
                parameterObservers.remove(parameterToken)
                if let id = id.withLock({ $0 }) { registry.unsubscribe(id) }
            }, onCommit: nil)
    }
}
