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

    /// Evaluations run by this database's live queries since it was opened (for tests).
    let evaluations = Locked(0)
    /// Re-runs skipped because the changed documents could not affect the results (for tests).
    let skippedEvaluations = Locked(0)

    /// How many distinct live queries are running (for tests).
    var count: Int { state.withLock { $0.liveQueries.count } }

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
                evaluations: evaluations, skipped: skippedEvaluations)
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
///    for JOINs, when the commit's ids are unknown (a purge by another process names the
///    collection without ids), when more than ``changedIDLimit`` ids are pending, or when more
///    than ``MatchTracking/limit`` documents matched.
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
    private let evaluations: Locked<Int>
    private let skippedEvaluations: Locked<Int>
    private let state = Locked(State())

    init(
        query: Query, parameters: Parameters?, observers: CommitObservers, tasks: ObservationTasks,
        evaluations: Locked<Int>, skipped: Locked<Int>
    ) {
        self.query = query
        self.parameters = parameters
        self.observers = observers
        self.tasks = tasks
        self.evaluations = evaluations
        self.skippedEvaluations = skipped
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
            let ids = summary.documentIDs[collection], !ids.isEmpty
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

    /// Evaluates until nothing is pending. Runs in one task at a time (`isRunning`).
    private func run() {
        while true {
            let work = state.withLock { state -> (followsCommit: Bool, check: (changed: Set<String>, matches: Set<String>)?)? in
                guard !state.hasEnded, state.hasWork else {
                    state.isRunning = false
                    return nil
                }
                defer {
                    state.isDirty = false
                    state.changedIDs = []
                }
                // Only a re-run caused by commits alone may be skipped: waiting subscribers need an event.
                guard state.isDirty, state.waiting.isEmpty, state.last != nil,
                    let changed = state.changedIDs, let matches = state.matches
                else { return (state.isDirty, nil) }
                return (true, (changed, matches))
            }
            guard let work else { return }
            if let check = work.check, cannotMatter(check.changed, previouslyMatching: check.matches) {
                skippedEvaluations.withLock { $0 += 1 }
                continue
            }
            evaluations.withLock { $0 += 1 }
            let outcome = Result { try query.executeTrackingMatches(parameters: parameters) }
            state.withLock { state in
                guard !state.hasEnded else { return }
                let toEveryone: Bool
                switch outcome {
                case .success(let (results, matches)):
                    toEveryone = state.last.map { !$0.hasSameRows(as: results) } ?? true
                    state.last = results
                    state.matches = matches
                case .failure:
                    toEveryone = work.followsCommit
                    state.last = nil
                    state.matches = nil
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
