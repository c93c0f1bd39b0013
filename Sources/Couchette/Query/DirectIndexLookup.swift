/// The lean executor of a prepared query that one index range answers: a lookup by an indexed
/// value (`WHERE contact.email = $email`) or a range walked in index order up to a LIMIT
/// (`WHERE birthday >= $date ORDER BY birthday LIMIT 20`), over one collection, every column the
/// document's id or a fixed path into it.
///
/// ``Executor`` runs any plan: a sink that filters, groups, de-duplicates and sorts, scan-order
/// and interruption objects, a row with its ORDER BY keys per document, copies between stages.
/// A query of this shape needs none of it. The range finds exactly the documents the WHERE
/// accepts (the WHERE is the one comparison that bounds it: ``IndexPlanner/Range/decidesWhere``),
/// and in result order (id order for a lookup, ORDER BY order for a walk), so each document is
/// projected where it lies in the map (``InPlaceProjection``) straight into the result rows:
/// bind, build the key, walk the index once, read the columns. Every value in the rows is owned,
/// so they outlive the read transaction.
///
/// Which access the planner picks still depends on the indexes and on the values bound, so it is
/// checked at each execution: when it is not one this type runs (a full scan, a WHERE the range
/// does not decide, an ORDER BY the range does not deliver), ``run(_:slots:)`` returns nil and the
/// query goes through ``Executor``. `explain()` says which one runs (``runs(_:context:)``).
///
/// A class: each execution then takes one reference to it, where a struct of these fields was
/// copied field by field (some fifteen retains and releases).
final class DirectIndexLookup: Sendable {
    private let plan: QueryPlan
    private let scan: IndexedScan
    private let paths: AccessPathCache
    private let term: IndexTerm
    private let projection: InPlaceProjection

    /// Nil when `plan` is not of this shape; ``Query`` makes one when it is created.
    init?(_ plan: QueryPlan) {
        guard plan.sources.count == 1, plan.stages.isEmpty, !plan.isAggregating, !plan.distinct, plan.having == nil,
            plan.mainFilter == nil, let projection = plan.inPlace, let scan = plan.mainScan as? IndexedScan,
            let paths = scan.paths, scan.analysis.whereIsOneComparison, case .term(let term)? = scan.analysis.condition,
            case .document = term.context
        else { return nil }
        switch term.predicate {
        case .equal, .range(_?, nil), .range(nil, _?): break
        default: return nil
        }
        self.plan = plan
        self.scan = scan
        self.paths = paths
        self.term = term
        self.projection = projection
    }

    /// Whether this type runs `choice` (what ``run(_:slots:)`` decides from the bound value and
    /// the index kept): no range (nothing matches); one range that decides the WHERE, in id order
    /// without ORDER BY; or one that decides it walked in ORDER BY order.
    private func runs(_ choice: IndexPlanner.Choice) -> Bool {
        switch choice {
        case .union(let ranges): ranges.isEmpty || (plan.order.isEmpty && ranges.count == 1 && ranges[0].decidesWhere)
        case .ordered(let range, _, _): range.decidesWhere
        }
    }

    /// Whether an execution in `snapshot` with the parameters of `context` runs here (explain()).
    func runs(_ snapshot: StoreSnapshot, context: EvaluationContext) throws -> Bool {
        try scan.choose(snapshot, context).map(runs) ?? false
    }

    /// What the WHERE's one comparison is bounded by in this execution.
    private enum Bound {
        /// Nothing matches: a comparison with MISSING, or an inequality with null.
        case nothing
        /// A string whose index key is whole: the range holds exactly the documents the WHERE
        /// accepts (``IndexPlanner/Range/decidesWhere``).
        case string(String)
        /// Anything else (a number, a long string, `= null`): the executor decides.
        case other
    }

    private func bound(_ context: EvaluationContext) throws -> Bound {
        let value: Datum?
        switch term.predicate {
        case .equal(let evaluator): value = try evaluator(context)
        case .range(let lower?, nil): value = try lower(context)
        case .range(nil, let upper?): value = try upper(context)
        default: return .other
        }
        switch value {
        case nil: return .nothing
        case .null?:
            if case .equal = term.predicate { return .other }  // null = null holds
            return .nothing
        case .string(let text)? where 2 * text.utf8.count + 3 < IndexKey.maximumLength: return .string(text)
        default: return .other
        }
    }

    /// The range of `index` the WHERE's comparison with `text` selects, as ``IndexPlanner``
    /// builds it: the keys whose first column equals `text`, or those on its side of it (strings
    /// sort after false, true and numbers, so `<=` starts at false: null and MISSING never pass).
    private func range(_ index: CompiledIndex, _ text: String) -> (lower: [UInt8], upper: [UInt8]) {
        var key: [UInt8] = []
        key.reserveCapacity(index.entriesPrefix.count + 2 * text.utf8.count + 3)
        key.append(contentsOf: index.entriesPrefix)
        IndexKey.append(.string(text), to: &key)
        switch term.predicate {
        case .range(_?, nil): return (key, index.entriesPrefix + [0xFF])
        case .range(nil, _?): return (index.entriesPrefix + [IndexKey.falseValue], KeyEncoding.successor(ofPrefix: key) ?? [0xFF])
        default: return (key, KeyEncoding.successor(ofPrefix: key) ?? [0xFF])
        }
    }

    /// The rows of one execution with the parameter values `slots` (``QueryPlan/parameterOrder``),
    /// or nil when this execution's access is not one this type runs.
    func run(_ reader: StoreReader, slots: [Datum?]) throws -> [[Datum?]]? {
        try Executor.checkSet(slots, of: plan)
        try reader.checkUsable(scan.collection)
        let context = EvaluationContext(constantsOf: plan, slots: slots)
        let text: String
        switch try bound(context) {
        case .nothing: return []
        case .other: return nil
        case .string(let string): text = string
        }
        let limit = try plan.limit.map { try Executor.count($0, context, "LIMIT") }
        let offset = try plan.offset.map { try Executor.count($0, context, "OFFSET") } ?? 0
        // The rows kept: the first `offset + limit` (saturating), as ``Executor/Sink`` keeps.
        let (sum, overflow) = offset.addingReportingOverflow(limit ?? 0)
        let wanted = limit == nil || overflow ? Int.max : sum
        let now = reader.clock.nowMilliseconds()
        let projection = projection
        return try reader.read { snapshot -> [[Datum?]]? in
            let indexes = try snapshot.indexes(scan.collection, readyOnly: true)
            guard !indexes.isEmpty else { return nil }
            var path = paths.path(for: indexes)
            if path == nil {  // planned by the scan, which keeps the path for these indexes
                _ = try scan.choose(snapshot, context)
                path = paths.path(for: indexes)
            }
            var rows: [[Datum?]] = []
            if wanted <= 64 { rows.reserveCapacity(wanted) }
            var visited = 0
            let order = ScanOrder()
            func keep(_ document: StoredDocument) throws -> Bool {
                // As ``Executor/Interruption`` checks: a close or a cancellation stops a long walk.
                try reader.checkOpen()
                visited &+= 1
                if visited % 64 == 0, Task.isCancelled { throw CancellationError() }
                rows.append(projection.project(document))
                // An inexact tie group (cut keys, numbers beyond 2^53) is sorted below: the walk
                // then goes on to the end of its first column, as the executor's does.
                return rows.count < wanted || !order.exact
            }
            switch path {
            case .term(let index)? where plan.order.isEmpty && !index.isArray:
                let bounds = range(index, text)
                try IndexedScan.forEachStoredDocument(
                    in: CollectionOfOne((bounds.lower, bounds.upper)), snapshot, scan.collection, now: now, keep)
            case .ordered(let index, let groupColumns, let descending)?:
                let bounds = range(index, text)
                var walked = IndexPlanner.Range(index: index, lower: bounds.lower, upper: bounds.upper, terms: term.text)
                walked.inIndexOrder = true
                walked.descending = descending
                walked.decidesWhere = true
                let choice = IndexPlanner.Choice.ordered(walked, groupColumns: groupColumns, descending: descending)
                try scan.walk(choice, snapshot, now: now, order: order, isSatisfied: { rows.count >= wanted }, keep)
                if !order.exact { rows = sorted(rows) }
            default:
                return nil
            }
            if offset == 0 && rows.count <= wanted { return rows }
            return Array(rows.prefix(wanted).dropFirst(offset))
        }
    }

    /// Rows of a walk whose ties were not all exact, in ORDER BY order (arrival order breaking
    /// ties), as ``Executor/Sink/finish()`` sorts them.
    private func sorted(_ rows: [[Datum?]]) -> [[Datum?]] {
        let order = plan.order
        var keyed = rows.enumerated().map { ordinal, values in
            Executor.Row(values: values, keys: order.map { values[$0.column!] }, ordinal: ordinal)
        }
        keyed.sort { a, b in Executor.precedes(a, b, order) }
        return keyed.map(\.values)
    }
}
