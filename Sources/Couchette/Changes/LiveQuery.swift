/// The live queries of one database: every ``Query/changes()`` stream subscribes here, and
/// streams whose queries have the same text, read the same collections and have equal parameters
/// share one ``LiveQuery``, so one commit costs one evaluation however many streams follow it.
///
/// A subscriber joining a live query that already has results receives them at once as its
/// initial event, without an evaluation; one joining while the first evaluation runs receives
/// that evaluation's results. Assigning a query's ``Query/parameters`` moves each of its streams
/// to the live query of the new parameters (and emits there, see ``LiveQuery``). A live query is
/// ended, and its commit observer removed, when its last subscriber leaves.
///
/// Lock order: the registry's lock, then a live query's, then a ``ChangeBuffer``'s.
final class LiveQueryRegistry: Sendable {
    /// What makes two subscriptions share an evaluation: equal keys give equal results.
    struct Key: Hashable, Sendable {
        let text: String
        /// The compiled collections (a collection deleted and re-created is another one).
        let collections: Set<CollectionSpec>
        let parameters: [String: Parameters.Identity]
    }

    /// One `changes()` stream.
    struct Subscriber: Sendable {
        let id: Int
        let query: Query
        let buffer: ChangeBuffer<QueryChange>
    }

    private struct State {
        var nextID = 0
        var liveQueries: [Key: LiveQuery] = [:]
        var memberships: [Int: (key: Key, subscriber: Subscriber)] = [:]
    }

    private let state = Locked(State())
    private let observers: CommitObservers
    private let tasks: ObservationTasks

    init(observers: CommitObservers, tasks: ObservationTasks) {
        self.observers = observers
        self.tasks = tasks
    }

    private struct ActivityObservers {
        var nextToken = 0
        var observers: [Int: any LiveQueryActivityObserver] = [:]
    }

    private let activityObservers = Locked(ActivityObservers())

    /// How many distinct live queries are running.
    var count: Int { state.withLock { $0.liveQueries.count } }

    /// Registers `observer` for the activity of every live query of this database, present and
    /// future; returns a token for ``removeActivityObserver(_:)``.
    func add(activityObserver observer: any LiveQueryActivityObserver) -> Int {
        activityObservers.withLock { registered in
            registered.nextToken += 1
            registered.observers[registered.nextToken] = observer
            return registered.nextToken
        }
    }

    func removeActivityObserver(_ token: Int) {
        activityObservers.withLock { $0.observers[token] = nil }
    }

    /// Tells every activity observer what a live query did (outside the registry's lock).
    private func report(_ event: (any LiveQueryActivityObserver) -> Void) {
        for observer in activityObservers.withLock({ Array($0.observers.values) }) { event(observer) }
    }

    /// Subscribes `buffer` to `query`'s live query (creating it, and its commit observer, when it
    /// is the first subscriber); returns the id for ``parametersChanged(_:)`` and ``unsubscribe(_:)``.
    /// The query's parameters are read under the registry's lock, so an assignment racing with
    /// this call is either read here or moves the new subscriber afterwards.
    func subscribe(_ query: Query, buffer: ChangeBuffer<QueryChange>) -> Int {
        state.withLock { state in
            state.nextID += 1
            join(Subscriber(id: state.nextID, query: query, buffer: buffer), &state)
            return state.nextID
        }
    }

    /// The subscriber's query got new parameters: leave the live query of the old ones and join
    /// the one of the new ones. Nothing happens for a subscriber that has left.
    func parametersChanged(_ id: Int) {
        state.withLock { state in
            guard let subscriber = leave(id, &state) else { return }
            join(subscriber, &state)
        }
    }

    /// The stream ended: leave its live query, ending it when it was the last subscriber.
    func unsubscribe(_ id: Int) {
        state.withLock { state in _ = leave(id, &state) }
    }

    private func join(_ subscriber: Subscriber, _ state: inout State) {
        let query = subscriber.query
        let parameters = query.parameters?.copy()
        let key = Key(
            text: query.text, collections: LiveQuery.collections(of: query),
            parameters: parameters?.identity ?? [:])
        let live: LiveQuery
        if let existing = state.liveQueries[key] {
            live = existing
        } else {
            live = LiveQuery(
                query: query, parameters: parameters, observers: observers, tasks: tasks,
                report: { [weak self] event in self?.report(event) })
            state.liveQueries[key] = live
            live.observeCommits()
        }
        state.memberships[subscriber.id] = (key, subscriber)
        live.add(subscriber)
    }

    private func leave(_ id: Int, _ state: inout State) -> Subscriber? {
        guard let (key, subscriber) = state.memberships.removeValue(forKey: id) else { return nil }
        if let live = state.liveQueries[key], live.remove(id) {
            state.liveQueries[key] = nil
            live.end()
        }
        return subscriber
    }
}

/// One shared live query: re-runs a query after commits that may change its results and hands
/// every result that differs from the previous one to all its subscribers.
///
/// ## When a re-run happens
/// The live query registers one commit observer, which runs on the writer thread (or on the
/// cross-process poller for other processes' commits) after every commit, in commit order:
/// 1. A commit whose summary names no collection the query reads (its FROM collection and every
///    JOINed one, as compiled) is ignored: no evaluation, no event.
/// 2. Otherwise the observer only marks the live query dirty, noting the changed ids, and, when no evaluation is running,
///    starts one as a child task of the database's ``ObservationTasks`` group. The writer never
///    runs, nor waits for, a query.
/// 3. Before re-running a query over a single collection (no JOIN or UNNEST), the task checks
///    whether the commits since the last evaluation can matter (``MatchTracking``): when none of
///    the changed documents passed WHERE at the last evaluation (the executor recorded which did)
///    and none passes it now (each is read and tested in a fresh snapshot), the results cannot
///    have changed and the re-run is skipped. The check is not made — the query simply re-runs —
///    for JOINs, when the commit's ids are unknown or incomplete (a purge by another process
///    leaves no id: ``CommitSummary/hasUnnamedChanges(_:)``), when more than ``changedIDLimit`` ids are pending, or when more
///    than ``MatchTracking/limit`` documents matched.
///    Without LIMIT or OFFSET, and with at most ``MatchedDocuments/limit`` matching documents,
///    the live query also keeps those documents: a re-run then reads only the changed documents
///    (and any the `sequences` table shows changed since), updates the kept ones, and runs the
///    rest of the plan (grouping, aggregates, projection, ordering) over them in id order — the
///    results a full re-run gives, without its scan. When none of them matched or matches, the
///    re-run is skipped as above.
/// 4. At most one evaluation is in flight. Commits arriving while it runs mark the query dirty
///    again and the task loops once more: a burst of commits is coalesced into one re-run. Each
///    evaluation reads its own LMDB snapshot, concurrently with writes; different live queries
///    evaluate in parallel.
/// 5. A subscriber that joins while there are no results yet (the first evaluation, or the last
///    one failed) also makes the task run until it got an event.
///
/// ## When an evaluation emits, and to whom
/// - Results different from the previous evaluation's (other columns, or other rows or row order;
///   see `ResultSet.hasSameRows(as:)`), or the first results: every subscriber.
/// - Results equal to the previous ones: only subscribers still waiting for their initial event.
/// - An error: every subscriber when the evaluation followed a commit, else only the waiting ones
///   (errors are always delivered, never swallowed; the next results are then emitted to all).
/// A subscriber that joins when there are results gets them at once as its initial event.
/// Assigning a query's ``Query/parameters`` makes each of its streams leave this live query and
/// join the one for the new parameters, so it always emits: the current results of that live
/// query, or the results of a new evaluation when the stream is its first subscriber.
///
/// Events are yielded under the live query's lock, so each subscriber receives them in order.
final class LiveQuery: Sendable {
    private struct State {
        var isRunning = false
        var isDirty = false
        /// The results of the last evaluation; nil before the first one and after a failed one.
        var last: ResultSet?
        var hasEnded = false
        var subscribers: [Int: LiveQueryRegistry.Subscriber] = [:]
        /// Subscribers that have not received an event yet.
        var waiting: Set<Int> = []
        var observerToken: Int?
        /// Documents changed by the commits since the last evaluation; nil when unknown.
        var changedIDs: Set<String>? = []
        /// Documents that passed WHERE at the last evaluation; nil when not tracked.
        var matches: Set<String>?
        /// Those documents with their contents, where the plan allows re-running over them
        /// (``MatchedDocuments``); nil when not kept.
        var documents: MatchedDocuments?

        var hasWork: Bool { isDirty || !waiting.isEmpty }
    }

    /// Beyond this many changed documents between two evaluations, the query re-runs without
    /// checking them one by one.
    static let changedIDLimit = 1000

    /// The query whose compiled plan is run (its own parameters are not used: `parameters` are).
    private let query: Query
    private let parameters: Parameters?
    /// The collections the query reads (FROM and JOINs): commits touching others are ignored.
    let collections: Set<CollectionSpec>
    private let observers: CommitObservers
    private let tasks: ObservationTasks
    /// Hands an event to the registry's ``LiveQueryActivityObserver``s.
    private let report: @Sendable ((any LiveQueryActivityObserver) -> Void) -> Void
    private let state = Locked(State())

    init(
        query: Query, parameters: Parameters?, observers: CommitObservers, tasks: ObservationTasks,
        report: @escaping @Sendable ((any LiveQueryActivityObserver) -> Void) -> Void
    ) {
        self.query = query
        self.parameters = parameters
        self.observers = observers
        self.tasks = tasks
        self.report = report
        collections = Self.collections(of: query)
    }

    static func collections(of query: Query) -> Set<CollectionSpec> {
        Set(
            query.plan.sources.compactMap { source in
                if case .collection(let spec) = source.kind { return spec }
                return nil
            })
    }

    /// Registers the commit observer (once, when created).
    func observeCommits() {
        let token = observers.add { [weak self] summary in
            guard let self, self.isAffected(by: summary) else { return }
            self.commitTouched(self.changedIDs(in: summary))
        }
        state.withLock { $0.observerToken = token }
    }

    /// Whether a commit may change the results: it touched a collection the query reads.
    func isAffected(by summary: CommitSummary) -> Bool {
        summary.documentIDs.keys.contains { collections.contains($0) }
    }

    /// The ids a commit changed in the query's collections; nil when unknown (or several
    /// collections, where ``MatchTracking`` does not apply).
    private func changedIDs(in summary: CommitSummary) -> [String]? {
        guard collections.count == 1, let collection = collections.first,
            let ids = summary.documentIDs[collection], !ids.isEmpty, !summary.hasUnnamedChanges(collection)
        else { return nil }
        return ids
    }

    /// A commit changed `ids` (nil: unknown documents) in the query's collections: re-run,
    /// coalesced with any running evaluation, unless they provably cannot matter.
    func commitTouched(_ ids: [String]?) {
        schedule { state in
            state.isDirty = true
            if let ids, let pending = state.changedIDs, pending.count + ids.count <= Self.changedIDLimit {
                state.changedIDs = pending.union(ids)
            } else {
                state.changedIDs = nil
            }
        }
    }

    /// Adds a subscriber: it gets the current results now, or the next evaluation's.
    func add(_ subscriber: LiveQueryRegistry.Subscriber) {
        schedule { state in
            state.subscribers[subscriber.id] = subscriber
            if let last = state.last {
                subscriber.buffer.yield(QueryChange(query: subscriber.query, results: last, error: nil))
            } else {
                state.waiting.insert(subscriber.id)
            }
        }
    }

    /// Removes a subscriber; true when none is left.
    func remove(_ id: Int) -> Bool {
        state.withLock { state in
            state.subscribers[id] = nil
            state.waiting.remove(id)
            return state.subscribers.isEmpty
        }
    }

    /// The last subscriber left: no more evaluations start; a running one finishes and is discarded.
    func end() {
        let token = state.withLock { state -> Int? in
            state.hasEnded = true
            state.last = nil
            defer { state.observerToken = nil }
            return state.observerToken
        }
        if let token { observers.remove(token) }
    }

    private func schedule(_ update: (inout State) -> Void) {
        let start = state.withLock { state -> Bool in
            update(&state)
            guard !state.hasEnded, !state.isRunning, state.hasWork else { return false }
            state.isRunning = true
            return true
        }
        if start {
            tasks.submit { self.run() }
        }
    }

    /// What one turn of ``run()`` does.
    private struct Work {
        /// Commits made it run (not only a subscriber waiting for its first event).
        var followsCommit: Bool
        /// Re-check only these changed documents against the kept ones (``MatchedDocuments``).
        var incremental: (documents: MatchedDocuments, changed: Set<String>)?
        /// Or: skip the re-run when none of these changed documents matched or matches now.
        var check: (changed: Set<String>, matches: Set<String>)?
    }

    private typealias Evaluation = (results: ResultSet, matches: Set<String>?, documents: MatchedDocuments?)

    /// Evaluates until nothing is pending. Runs in one task at a time (`isRunning`).
    private func run() {
        while let work = nextWork() {
            let outcome: Result<Evaluation, any Error>
            if let (documents, changed) = work.incremental {
                switch Result(catching: { try query.executeIncrementally(parameters: parameters, previous: documents, changed: changed) }) {
                case .success(.unchanged(let documents)):
                    state.withLock { $0.documents = documents }
                    report { $0.liveQuerySkippedEvaluation(query.text) }
                    continue
                case .success(.evaluated(let results, let documents)):
                    report { $0.liveQueryEvaluated(query.text, incrementally: true) }
                    outcome = .success((results, nil, documents))
                case .success(.tooMany):
                    outcome = evaluate()
                case .failure(let error):
                    outcome = .failure(error)
                }
            } else {
                if let check = work.check, cannotMatter(check.changed, previouslyMatching: check.matches) {
                    report { $0.liveQuerySkippedEvaluation(query.text) }
                    continue
                }
                outcome = evaluate()
            }
            deliver(outcome, followsCommit: work.followsCommit)
        }
    }

    /// Takes what is pending; nil (and no longer running) when nothing is.
    private func nextWork() -> Work? {
        state.withLock { state -> Work? in
            guard !state.hasEnded, state.hasWork else {
                state.isRunning = false
                return nil
            }
            defer {
                state.isDirty = false
                state.changedIDs = []
            }
            // Only a re-run caused by commits alone may be skipped or made incremental: waiting
            // subscribers need an event (and there are none while there are results).
            guard state.isDirty, state.waiting.isEmpty, state.last != nil, let changed = state.changedIDs else {
                return Work(followsCommit: state.isDirty)
            }
            if let documents = state.documents { return Work(followsCommit: true, incremental: (documents, changed)) }
            guard let matches = state.matches else { return Work(followsCommit: true) }
            return Work(followsCommit: true, check: (changed, matches))
        }
    }

    /// Runs the whole plan.
    private func evaluate() -> Result<Evaluation, any Error> {
        report { $0.liveQueryEvaluated(query.text, incrementally: false) }
        return Result { try query.executeTrackingMatches(parameters: parameters) }
    }

    /// Keeps an evaluation's outcome and hands it to the subscribers it concerns.
    private func deliver(_ outcome: Result<Evaluation, any Error>, followsCommit: Bool) {
        state.withLock { state in
            guard !state.hasEnded else { return }
            let toEveryone: Bool
            switch outcome {
            case .success(let evaluation):
                toEveryone = state.last.map { !$0.hasSameRows(as: evaluation.results) } ?? true
                state.last = evaluation.results
                state.matches = evaluation.matches
                state.documents = evaluation.documents
            case .failure:
                toEveryone = followsCommit
                state.last = nil
                state.matches = nil
                state.documents = nil
            }
            for (id, subscriber) in state.subscribers where toEveryone || state.waiting.contains(id) {
                subscriber.buffer.yield(
                    QueryChange(
                        query: subscriber.query, results: try? outcome.get().results,
                        error: outcome.failureValue))
            }
            state.waiting.removeAll()
        }
    }
}

extension LiveQuery {
    /// True when documents `changed` since the last evaluation neither passed WHERE then
    /// (`previouslyMatching`) nor pass it now: the results cannot have changed. A failing check
    /// answers false (the re-run then reports the error).
    private func cannotMatter(_ changed: Set<String>, previouslyMatching: Set<String>) -> Bool {
        guard changed.isDisjoint(with: previouslyMatching) else { return false }
        return (try? !query.anyMatches(changed, parameters: parameters)) ?? false
    }
}

extension Result {
    fileprivate var failureValue: Failure? {
        if case .failure(let error) = self { return error }
        return nil
    }
}
