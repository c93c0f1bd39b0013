/// A compiled SQL++ query, created by ``Database/createQuery(_:)``.
///
/// The text is parsed and compiled once, when the query is created; every ``execute()`` reuses
/// the compiled plan and reads one consistent snapshot of the database, on the caller's thread
/// (no hop through the database actor, no waiting for writes).
///
/// ```swift
/// let query = try db.createQuery("SELECT meta().id AS id, title FROM _default.tasks WHERE done = $done")
/// query.parameters = Parameters().setBoolean(false, forName: "done")
/// for result in try await query.execute() {
///     print(result.string(forKey: "id") ?? "", result.string(forKey: "title") ?? "")
/// }
/// ```
///
/// - Throws (from `execute()`): `.invalidQuery` when a `$parameter` the query uses is not set,
///   `.invalidParameter` when a parameter value cannot be used, `.notOpen` when the database is
///   closed or a queried collection was deleted.
public final class Query: Sendable {
    let reader: StoreReader
    /// The database the query was created on, for its live queries (``changes()``); weak, so that
    /// a query kept after the database is dropped does not keep it open.
    weak let database: Database?
    let plan: QueryPlan
    /// Built once: every result set of this query shares it.
    private let columns: ColumnNames
    /// The SQL++ text the query was created from.
    public let text: String
    /// The lean executor for this query's shape, when it has one (``DirectIndexLookup``).
    private let direct: DirectIndexLookup?
    /// The assigned parameters, and their values by slot as evaluators read them: found once per
    /// assignment instead of once per execution.
    private let storedParameters: Locked<Assignment>
    /// Called after every assignment to ``parameters``: live queries re-run and emit.
    let parameterObservers = ParameterObservers()

    init(database: Database, text: String, plan: QueryPlan) {
        self.reader = database.reader
        self.database = database
        self.text = text
        self.plan = plan
        columns = ColumnNames(plan.columnNames)
        direct = DirectIndexLookup(plan)
        storedParameters = Locked(Assignment(entries: nil, plan: plan))
    }

    /// One assignment of ``parameters``.
    private struct Assignment: Sendable {
        /// The values assigned (nil: none).
        var entries: Parameters.Entries?
        /// The values of ``QueryPlan/parameterOrder`` (nil: unset).
        var slots: [Datum?]
        /// Why the values cannot be used (one could not be stored): every execution throws it.
        var failure: CouchetteError?
        /// The values by name, made by the first execution through ``Executor`` that needs them.
        var byName: [String: Datum]?

        init(entries: Parameters.Entries?, plan: QueryPlan) {
            slots = []
            assign(entries, plan: plan)
        }

        /// Takes `entries` as the values: the slots are refilled in place when no execution
        /// holds them, so a prepared query re-parameterized per execution allocates no slots.
        mutating func assign(_ entries: Parameters.Entries?, plan: QueryPlan) {
            self.entries = entries
            byName = nil
            do {
                try Parameters.fill(&slots, from: entries ?? [], for: plan.parameterOrder)
                failure = nil
            } catch {
                slots = []
                failure = error
            }
        }

        /// The slots, or the failure.
        func checkedSlots() throws -> [Datum?] {
            if let failure { throw failure }
            return slots
        }

        mutating func valuesByName() throws -> [String: Datum] {
            if let failure { throw failure }
            if let byName { return byName }
            let values = try Parameters.resolve(entries ?? [])
            byName = values
            return values
        }
    }

    /// The values of the query's `$parameters`. Assigning stores a copy: later changes to the
    /// `Parameters` object have no effect until it is assigned again. Reading gives a copy too.
    public var parameters: Parameters? {
        get { storedParameters.withLock { $0.entries }.map(Parameters.init(entries:)) }
        set {
            let entries = newValue?.snapshot
            storedParameters.withLock { $0.assign(entries, plan: plan) }
            parameterObservers.notify()
        }
    }

    /// The names of the result columns, in order.
    public var columnNames: [String] { plan.columnNames }

    /// Runs the query against the current contents of the database, on the caller's executor:
    /// a prepared query re-run many times pays no hop to another thread per execution.
    nonisolated(nonsending) public func execute() async throws -> ResultSet {
        try executeNow()
    }

    func executeNow() throws -> ResultSet {
        let slots = try storedParameters.withLock { try $0.checkedSlots() }
        if let direct, let rows = try direct.run(reader, slots: slots) { return ResultSet(columns: columns, rows: rows) }
        let values = try storedParameters.withLock { try $0.valuesByName() }
        let rows = try Executor(plan: plan).run(reader, parameters: values, slots: slots)
        return ResultSet(columns: columns, rows: rows)
    }

    /// Runs the compiled plan with `parameters` instead of the query's own (shared live queries).
    func executeNow(parameters: Parameters?) throws -> ResultSet {
        let values = try parameters?.resolved() ?? [:]
        let rows = try Executor(plan: plan).run(reader, parameters: values)
        return ResultSet(columns: columns, rows: rows)
    }

    /// Like ``executeNow(parameters:)``, also returning the ids of the documents that passed
    /// WHERE when ``MatchTracking`` applies (nil otherwise).
    func executeTrackingMatches(parameters: Parameters?) throws -> (results: ResultSet, matches: Set<String>?, documents: MatchedDocuments?)
    {
        let values = try parameters?.resolved() ?? [:]
        let (rows, matches, documents) = try Executor(plan: plan).run(reader, parameters: values, trackingMatches: true)
        return (ResultSet(columns: columns, rows: rows), matches, documents)
    }

    /// What ``executeIncrementally(parameters:previous:changed:)`` found.
    enum IncrementalResults {
        /// No changed document matched before or matches now: the last results stand.
        case unchanged(MatchedDocuments)
        case evaluated(ResultSet, MatchedDocuments)
        /// Too many changes or matches: run the whole query.
        case tooMany
    }

    /// The results after commits changed `changed` (and whatever else the `sequences` table shows
    /// since `previous` was read), re-reading only those documents (see ``MatchedDocuments``).
    func executeIncrementally(parameters: Parameters?, previous: MatchedDocuments, changed: Set<String>) throws -> IncrementalResults {
        let values = try parameters?.resolved() ?? [:]
        switch try Executor(plan: plan).runIncrementally(reader, parameters: values, previous: previous, changed: changed) {
        case .unchanged(let documents): return .unchanged(documents)
        case .evaluated(let rows, let documents): return .evaluated(ResultSet(columns: columns, rows: rows), documents)
        case .tooMany: return .tooMany
        }
    }

    /// Whether any of `ids` now passes the query's WHERE clause (see ``MatchTracking``).
    func anyMatches(_ ids: Set<String>, parameters: Parameters?) throws -> Bool {
        try Executor(plan: plan).anyMatches(ids, in: reader, parameters: try parameters?.resolved() ?? [:])
    }

    /// A description of how the query runs: the scans, joins and the steps after them.
    ///
    /// The first line says how the main collection is read, for the current indexes and
    /// parameters: `SCAN collection` (every document) or `INDEX SCAN collection USING name
    /// [bounds]` (the index and the conditions that bound its ranges). A last line `DIRECT
    /// LOOKUP` says that the rows are read straight from that index range, projected where the
    /// documents lie, without the general executor's steps (the lines before it say what they
    /// compute); when every column is the document id or an ORDER BY path, and no document can
    /// have expired, it says the columns are read from the index entries, without the documents.
    public func explain() async throws -> String {
        try reader.checkOpen()
        let values = (try? storedParameters.withLock { try $0.valuesByName() }) ?? [:]
        let context = EvaluationContext(plan, parameters: values)
        let now = reader.clock.nowMilliseconds()
        return try reader.read { snapshot in
            let direct = try self.direct?.explanation(snapshot, context: context, now: now)
            return try plan.mainScan.explain(snapshot, context: context) + plan.explanationTail(snapshot) + (direct.map { "\n" + $0 } ?? "")
        }
    }
}

/// Callbacks run after a query's parameters are assigned (the live-query seam of ``Query``).
final class ParameterObservers: Sendable {
    typealias Observer = @Sendable () -> Void

    private let state = Locked<(nextToken: Int, observers: [Int: Observer])>((0, [:]))

    /// Registers `observer`; returns a token for ``remove(_:)``.
    func add(_ observer: @escaping Observer) -> Int {
        state.withLock { state in
            state.nextToken += 1
            state.observers[state.nextToken] = observer
            return state.nextToken
        }
    }

    func remove(_ token: Int) {
        state.withLock { state in _ = state.observers.removeValue(forKey: token) }
    }

    var count: Int { state.withLock { $0.observers.count } }

    func notify() {
        // An observer added while this runs may or may not be told, as with the lock: it reads
        // the parameters itself when it starts (``LiveQueryRegistry``).
        let observers = state.withLock { state in
            state.observers.isEmpty ? [] : state.observers.sorted { $0.key < $1.key }.map(\.value)
        }
        for observer in observers { observer() }
    }
}
