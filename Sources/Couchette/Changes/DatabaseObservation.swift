/// Everything that watches one database: the change streams' commit observers, the shared live
/// queries (``LiveQueryRegistry``), the task group their evaluations run in
/// (``ObservationTasks``) and the monitor of other processes' commits (``ExternalChanges``,
/// plugged into the commit observers as a ``TransactionObserver``). Owned by ``Database``, which
/// closes it; it sees the database only through ``StoreReader`` and ``CommitObservers``.
final class DatabaseObservation: Sendable {
    let reader: StoreReader
    let observers: CommitObservers
    /// The live queries of this database, shared by subscribers with the same text and parameters.
    let liveQueries: LiveQueryRegistry
    /// The task group live-query evaluations run in.
    let tasks = ObservationTasks()
    /// Other processes' (and other instances') commits, published through ``observers``.
    let external: ExternalChanges

    init(reader: StoreReader, observers: CommitObservers) {
        self.reader = reader
        self.observers = observers
        external = ExternalChanges(reader: reader, observers: observers)
        liveQueries = LiveQueryRegistry(observers: observers, tasks: tasks)
    }

    /// Ends observation when the database closes: no evaluation starts afterwards.
    func close() {
        tasks.close()
    }

    /// Registers a commit observer feeding a new stream, before returning it.
    ///
    /// `event` runs on the writer thread after every commit, in commit order; it turns the
    /// commit's summary into this feed's event, or nil when the commit does not concern it.
    func changeStream<Element: Sendable>(
        merge: @escaping ChangeBuffer<Element>.Merge,
        event: @escaping @Sendable (CommitSummary) -> Element?
    ) -> ChangeStream<Element> {
        let buffer = ChangeBuffer<Element>(merge: merge)
        return changeStream(buffer: buffer) { summary in
            if let element = event(summary) { buffer.yield(element) }
        }
    }

    /// Registers `onCommit` as a commit observer for the stream reading `buffer` (nil: the stream
    /// only needs to end at close, because another observer feeds it, as for shared live queries).
    ///
    /// The observer is removed when the stream ends: when its consumer goes away, or when the
    /// database closes (the buffer is then finished: queued events are still delivered). Either
    /// way `onEnd` runs once, after the observer is removed.
    ///
    /// When the database is closed already, or closes while this registers, the stream is
    /// finished: `close()` marks the database closed before it calls the close observers, so
    /// either our close observer is called or the check after `add` sees the database closed.
    func changeStream<Element: Sendable>(
        buffer: ChangeBuffer<Element>,
        onEnd: (@Sendable () -> Void)? = nil,
        onCommit: CommitObservers.Observer?
    ) -> ChangeStream<Element> {
        guard reader.isOpen else {
            buffer.finish()
            onEnd?()
            return ChangeStream(buffer: buffer)
        }
        let token = observers.add(onCommit, onClose: { buffer.finish() })
        external.ensureRunning()
        let observers = self.observers
        buffer.setOnTermination {
            observers.remove(token)
            onEnd?()
        }
        if !reader.isOpen { buffer.finish() }
        return ChangeStream(buffer: buffer)
    }
}
