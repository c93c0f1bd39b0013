/// Runs a ``QueryPlan`` inside one LMDB read snapshot and returns the result rows.
///
/// The pipeline: the main ``DocumentScan``; JOINs (by document id, by probing an index of the
/// joined collection (``IndexJoin``), by hashing on an equality of the ON clause, else nested loops
/// over the joined collection, read once per execution) and UNNESTs; WHERE; GROUP BY
/// and aggregates in one pass (a hash table of groups); HAVING; projection; DISTINCT by hashing;
/// ORDER BY (with a LIMIT, a heap of the best `offset + limit` rows: ``TopRows``); OFFSET and LIMIT. Without
/// ORDER BY, grouping or DISTINCT the scan stops as soon as enough rows are found.
struct Executor {
    let plan: QueryPlan

    struct Row {
        var values: [Datum?]
        var keys: [Datum?]
        /// Arrival order: ties in ORDER BY keep it, so results are deterministic.
        var ordinal: Int
    }

    func run(_ reader: StoreReader, parameters: [String: Datum], slots: [Datum?]? = nil) throws -> [[Datum?]] {
        try run(reader, parameters: parameters, slots: slots, trackingMatches: false).rows
    }

    /// Runs the query; with `trackingMatches`, also returns the ids of the main collection's
    /// documents that passed WHERE (nil when there were more than ``MatchTracking/limit``, or
    /// when the query reads more than one source): what a live query needs to tell later that a
    /// commit cannot change its results (see ``anyMatches(_:in:parameters:)``), and, where
    /// ``MatchTracking/keepsDocuments(of:)`` allows, those documents themselves for
    /// ``runIncrementally(_:parameters:previous:changed:)``.
    func run(
        _ reader: StoreReader, parameters: [String: Datum], slots: [Datum?]? = nil,
        trackingMatches: Bool
    ) throws -> (rows: [[Datum?]], matches: Set<String>?, documents: MatchedDocuments?) {
        let context = EvaluationContext(plan, parameters: parameters, slots: slots)
        try Self.checkSet(context.parameterValues, of: plan)
        for source in plan.sources {
            if case .collection(let spec) = source.kind { try reader.checkUsable(spec) }
        }
        let limit = try plan.limit.map { try Self.count($0, context, "LIMIT") }
        let offset = try plan.offset.map { try Self.count($0, context, "OFFSET") } ?? 0
        let now = reader.clock.nowMilliseconds()
        var matches: Set<String>?
        var documents: MatchedDocuments?
        var rows = try reader.read { snapshot -> [Row] in
            let scanOrder = ScanOrder()
            let sink = Sink(
                plan: plan, context: context, limit: limit, offset: offset, scanOrder: scanOrder,
                interruption: Interruption(reader: reader))
            if trackingMatches && MatchTracking.applies(to: plan) { sink.matches = [] }
            var lastSequence: UInt64?
            var purges: UInt64 = 0
            if trackingMatches && MatchTracking.keepsDocuments(of: plan), case .collection(let spec) = plan.sources[0].kind {
                sink.matchedBindings = []
                lastSequence = try snapshot.lastSequence(spec)
                purges = try snapshot.purgeCount(spec)
            }
            let joined = try plan.stages.map { try prepare($0, snapshot, now, context, sink.interruption) }
            if let projection = plan.inPlace, !trackingMatches {
                // Documents are projected where they lie, unless the WHERE still has to be
                // evaluated on them (neither the index range nor the body precheck decided it).
                let project = { (document: StoredDocument) throws -> Bool in
                    try sink.interruption.check()
                    if plan.filter == nil || scanOrder.passesWhere || scanOrder.rowPassesFilter {
                        sink.keep(projection.project(document))
                    } else {
                        context.sources[0] = document.binding()
                        try emit(stage: 0, joined, context, sink)
                    }
                    return !sink.isFull
                }
                if let scan = plan.mainScan as? IndexedScan {
                    try scan.forEachStored(
                        snapshot, now: now, context: context, order: scanOrder,
                        isSatisfied: { sink.hasAllRows }, filter: { try plan.precheck?.bind(context) }, project)
                    return try sink.finish()
                }
                if let scan = plan.mainScan as? CollectionScan {
                    try scan.forEachStored(snapshot, now: now, order: scanOrder, filter: try plan.precheck?.bind(context), project)
                    return try sink.finish()
                }
            }
            try plan.mainScan.forEach(
                snapshot, now: now, context: context, order: scanOrder,
                isSatisfied: { sink.hasAllRows }, filter: try plan.precheck?.bind(context)
            ) { binding in
                try sink.interruption.check()
                context.sources[0] = binding
                if let mainFilter = plan.mainFilter, !scanOrder.rowPassesFilter {
                    guard let result = try mainFilter(context), !result.isNull, result.isTruthy else { return true }
                }
                try emit(stage: 0, joined, context, sink)
                return !sink.isFull
            }
            defer {
                matches = sink.matches
                // Kept only when the scan delivered documents in id order (not in ORDER BY order).
                if let bindings = sink.matchedBindings, let lastSequence, !scanOrder.inOrder {
                    documents = MatchedDocuments(scanned: bindings, lastSequence: lastSequence, purges: purges)
                }
            }
            return try sink.finish()
        }
        if !plan.order.isEmpty && limit == nil {  // with a LIMIT, the sink's heap returns them sorted
            let order = plan.order
            rows.sort { a, b in Executor.precedes(a, b, order) }
        }
        let window = rows.dropFirst(offset).prefix(limit ?? Int.max)
        return (window.map(\.values), matches, documents)
    }

    /// Every parameter the query uses has a slot (``QueryPlan/parameterOrder``): a nil slot is
    /// an unset parameter, named in the error.
    static func checkSet(_ slots: [Datum?], of plan: QueryPlan) throws {
        guard slots.contains(where: { $0 == nil }) else { return }
        let unset = zip(plan.parameterOrder, slots).filter { $0.1 == nil }.map(\.0).sorted()
        throw CouchetteError(
            .invalidQuery,
            "query parameter\(unset.count > 1 ? "s" : "") \(unset.map { "$" + $0 }.joined(separator: ", ")) \(unset.count > 1 ? "are" : "is") not set; set them with query.parameters"
        )
    }

    /// LIMIT or OFFSET: a number, negative counting as 0; fractions are truncated and numbers
    /// beyond `Int.max` (1e300) mean "no limit" / "skip everything" rather than trapping.
    static func count(_ evaluator: Evaluator, _ context: EvaluationContext, _ clause: String) throws -> Int {
        switch try evaluator(context) {
        case .int(let number)?: return Int(clamping: max(0, number))
        case .double(let number)? where !number.isNaN: return Int(exactly: number.rounded(.towardZero)) ?? (number < 0 ? 0 : .max)
        case let other:
            throw CouchetteError(.invalidQuery, "\(clause) must be a number, got \(other.map { JSON.string(from: $0.value) } ?? "MISSING")")
        }
    }

    /// Stops a running query when its task is cancelled or its database closed: checked once per
    /// row scanned, joined or unnested, so neither waits longer than one row's evaluation.
    /// ``Database/close()`` waits for running reads, and this is how it never waits on a long one.
    final class Interruption {
        private let reader: StoreReader
        private var calls = 0
        /// Task cancellation is looked up less often than the (atomic) open flag.
        private static let cancellationInterval = 64

        init(reader: StoreReader) { self.reader = reader }

        func check() throws {
            try reader.checkOpen()
            calls &+= 1
            if calls % Self.cancellationInterval == 0, Task.isCancelled { throw CancellationError() }
        }
    }

    // MARK: - Joins

    /// A joined collection read once per execution, with its hash table when the ON clause has an
    /// equality to hash on.
    struct JoinedSource {
        var bindings: [SourceBinding] = []
        var buckets: [HashKey: [Int]]?
        /// For joins on `META(joined).id`: finds the joined document by its id.
        var lookup: ((String) throws -> SourceBinding?)?
        /// For joins on a property an index of the joined collection holds: the documents
        /// whose indexed value may equal the outer value (``IndexJoin``).
        var probe: ((Datum?) throws -> [SourceBinding])?
    }

    private func prepare(
        _ stage: Stage, _ snapshot: StoreSnapshot, _ now: UInt64,
        _ context: EvaluationContext, _ interruption: Interruption
    ) throws -> JoinedSource {
        guard case .join(_, let source, let scan, _, let hash) = stage else { return JoinedSource() }
        var joined = JoinedSource()
        if let hash, hash.innerIsDocumentID, case .collection(let spec) = plan.sources[source].kind {
            let includeDeleted = plan.sources[source].includeDeleted
            joined.lookup = { id in try CollectionScan.lookup(snapshot, spec, id, now: now, includeDeleted: includeDeleted) }
            return joined
        }
        if let hash, case .collection(let spec) = plan.sources[source].kind,
            let join = try IndexJoin.choose(snapshot, spec, innerKey: hash.innerKey, includeDeleted: plan.sources[source].includeDeleted)
        {
            joined.probe = { value in
                var found: [SourceBinding] = []
                try join.forEachCandidate(snapshot, equalTo: value, now: now) { binding in
                    try interruption.check()
                    found.append(binding)
                    return true
                }
                return found
            }
            return joined
        }
        try scan.forEach(snapshot, now: now, context: context, order: ScanOrder(), isSatisfied: { false }, filter: nil) { binding in
            try interruption.check()
            joined.bindings.append(binding)
            return true
        }
        if let hash {
            var buckets: [HashKey: [Int]] = [:]
            for (index, binding) in joined.bindings.enumerated() {
                context.sources[source] = binding
                guard let key = try hash.inner(context) else { continue }  // MISSING never matches
                buckets[HashKey(key), default: []].append(index)
            }
            context.sources[source] = nil
            joined.buckets = buckets
        }
        return joined
    }

    private func emit(stage index: Int, _ joined: [JoinedSource], _ context: EvaluationContext, _ sink: Sink) throws {
        guard index < plan.stages.count else {
            try sink.accept()
            return
        }
        switch plan.stages[index] {
        case .unnest(let source, let evaluator):
            for element in Operators.unnested(try evaluator(context)) where !sink.isFull {
                try sink.interruption.check()
                context.sources[source] = .element(element)
                try emit(stage: index + 1, joined, context, sink)
            }
            context.sources[source] = nil
        case .join(let kind, let source, _, let on, let hash):
            var matched = false
            func consider(_ binding: SourceBinding, decided: Bool = false) throws {
                guard !sink.isFull else { return }
                try sink.interruption.check()
                context.sources[source] = binding
                if !decided, let on {
                    guard let result = try on(context), !result.isNull, result.isTruthy else { return }
                }
                matched = true
                try emit(stage: index + 1, joined, context, sink)
            }
            let side = joined[index]
            if let hash, let lookup = side.lookup {
                // The hash key of a document id is its string: other outer values match nothing.
                if case .string(let id)? = try hash.outer(context), let binding = try lookup(id) {
                    try consider(binding, decided: hash.lookupDecidesOn)
                }
            } else if let hash, let probe = side.probe {
                for binding in try probe(try hash.outer(context)) { try consider(binding) }
            } else if let hash, let buckets = side.buckets {
                for candidate in try hash.outer(context).flatMap({ buckets[HashKey($0)] }) ?? [] { try consider(side.bindings[candidate]) }
            } else {
                for binding in side.bindings { try consider(binding) }
            }
            if kind == .left && !matched {
                context.sources[source] = nil
                try emit(stage: index + 1, joined, context, sink)
            }
            context.sources[source] = nil
        }
    }

    // MARK: - Sorting

    static func precedes(_ a: Row, _ b: Row, _ order: [OrderKey]) -> Bool {
        for (index, key) in order.enumerated() {
            let comparison = ValueOrder.compare(a.keys[index], b.keys[index], key.collation)
            if comparison != 0 { return key.descending ? comparison > 0 : comparison < 0 }
        }
        return a.ordinal < b.ordinal
    }

    // MARK: - Sink

    /// Receives each joined row: filters, groups or projects it, de-duplicates, and keeps at most
    /// what ORDER BY/LIMIT need.
    ///
    /// Unchecked exclusivity on the rows kept: one execution on one thread owns its sink, and
    /// ``rows`` and ``ordinal`` are changed only by `keep` and ``finish()``, which call nothing that
    /// reaches the sink while they change them, so accesses cannot overlap; the runtime check ran
    /// at every row kept.
    final class Sink {
        let plan: QueryPlan
        let context: EvaluationContext
        let limit: Int?
        let offset: Int
        @exclusivity(unchecked) var rows: [Row] = []
        @exclusivity(unchecked) var ordinal = 0
        var seen: Set<[HashKey]> = []
        var groups: [[HashKey]: Int] = [:]
        /// The groups of a GROUP BY on one expression, by its value.
        var singleKeyGroups: [HashKey: Int] = [:]
        var groupStates: [(sources: [SourceBinding?], accumulators: [Accumulator])] = []

        /// With ORDER BY and LIMIT: only the first `offset + limit` rows are kept.
        var top: TopRows<Row>?

        /// Rows arriving in ORDER BY order are kept as they come (see ``ScanOrder``).
        let scanOrder: ScanOrder

        /// When tracked: the ids of the documents that passed WHERE; nil once too many.
        var matches: Set<String>?
        /// When kept: the documents that passed WHERE, in scan order; nil once too many.
        var matchedBindings: [SourceBinding]?

        let interruption: Interruption
        /// `offset + limit` (saturating), nil without a LIMIT.
        private let wanted: Int?

        init(
            plan: QueryPlan, context: EvaluationContext, limit: Int?, offset: Int, scanOrder: ScanOrder,
            interruption: Interruption
        ) {
            self.interruption = interruption
            self.plan = plan
            self.context = context
            self.limit = limit
            self.offset = offset
            self.scanOrder = scanOrder
            let (sum, overflow) = offset.addingReportingOverflow(limit ?? 0)
            wanted = limit == nil ? nil : overflow ? .max : sum
            if let wanted, !plan.order.isEmpty {
                let order = plan.order
                top = TopRows(capacity: wanted) { a, b in
                    Executor.precedes(a, b, order)
                }
            }
        }

        /// True when no later row can change the result: no sort, grouping or DISTINCT pending,
        /// or rows arriving in exact ORDER BY order (each tie group in id order, as ties are
        /// broken) with the first `offset + limit` in — so an index walk stops right there,
        /// before reading the rest of the last tie group.
        var isFull: Bool {
            guard let wanted, !plan.isAggregating else { return false }
            guard plan.order.isEmpty || (scanOrder.inOrder && scanOrder.exact) else { return false }
            return rows.count >= wanted
        }

        /// True when rows arriving in ORDER BY order can no longer change the result: the
        /// top `offset + limit` rows are all there.
        var hasAllRows: Bool {
            if scanOrder.inOrder, let top { return rows.count >= top.capacity }
            if let top { return top.rows.count >= top.capacity }
            return isFull
        }

        /// Set when every row is known to pass WHERE already (kept documents, ``MatchedDocuments``).
        var rowsPassedFilter = false

        func accept() throws {
            // Without stages the scan's verdicts are on the filter itself (with them, on ``QueryPlan/mainFilter``).
            if !rowsPassedFilter, let filter = plan.filter, !((scanOrder.passesWhere || scanOrder.rowPassesFilter) && plan.stages.isEmpty) {
                guard let result = try filter(context), !result.isNull, result.isTruthy else { return }
            }
            if matches != nil, let id = context.sources[0]?.id {
                matches!.insert(id)
                if matches!.count > MatchTracking.limit { matches = nil }
            }
            if matchedBindings != nil, let binding = context.sources[0] {
                matchedBindings!.append(binding)
                if matchedBindings!.count > MatchedDocuments.limit { matchedBindings = nil }
            }
            if plan.isAggregating {
                let index: Int
                if plan.groupKeys.count == 1 {  // the usual GROUP BY: no key array per row
                    let key = HashKey(try plan.groupKeys[0](context))
                    if let existing = singleKeyGroups[key] {
                        index = existing
                    } else {
                        index = newGroup()
                        singleKeyGroups[key] = index
                    }
                } else {
                    let key = try plan.groupKeys.map { HashKey(try $0(context)) }
                    if let existing = groups[key] {
                        index = existing
                    } else {
                        index = newGroup()
                        groups[key] = index
                    }
                }
                for (slot, aggregate) in plan.aggregates.enumerated() {
                    groupStates[index].accumulators[slot].add(try aggregate.argument.map { try $0(context) } ?? .null)
                }
                return
            }
            try project()
        }

        /// Starts a group at the current row; returns its index in ``groupStates``.
        private func newGroup() -> Int {
            groupStates.append((context.sources, plan.aggregates.map(Accumulator.init)))
            return groupStates.count - 1
        }

        private func project() throws {
            let values = try plan.columns.map { try $0(context) }
            if plan.distinct {
                guard seen.insert(values.map(HashKey.init)).inserted else { return }
            }
            let keys = try plan.order.map { key in try key.column.map { values[$0] } ?? key.evaluator(context) }
            keep(Row(values: values, keys: keys, ordinal: ordinal))
        }

        /// Keeps a row projected in place (``InPlaceProjection``): no DISTINCT, and every ORDER BY
        /// key is one of its columns.
        func keep(_ values: [Datum?]) {
            keep(Row(values: values, keys: plan.order.isEmpty ? [] : plan.order.map { values[$0.column!] }, ordinal: ordinal))
        }

        private func keep(_ row: Row) {
            ordinal += 1
            if top != nil && !scanOrder.inOrder { top!.insert(row) } else { rows.append(row) }
        }

        func finish() throws -> [Row] {
            if plan.isAggregating { try finishGroups() }
            if let top, scanOrder.inOrder {
                if !scanOrder.exact {
                    let order = plan.order
                    rows.sort { a, b in Executor.precedes(a, b, order) }
                }
                return Array(rows.prefix(top.capacity))
            }
            return top?.sorted() ?? rows
        }

        private func finishGroups() throws {
            if groupStates.isEmpty && plan.groupKeys.isEmpty {
                // Aggregates over no rows still give one row (COUNT(*) = 0).
                groupStates.append((Array(repeating: nil, count: plan.sources.count), plan.aggregates.map(Accumulator.init)))
            }
            for state in groupStates {
                context.sources = state.sources
                context.aggregates = state.accumulators.map { $0.result }
                if let having = plan.having {
                    guard let result = try having(context), !result.isNull, result.isTruthy else { continue }
                }
                try project()
            }
        }
    }
}

/// The running state of one aggregate in one group.
struct Accumulator {
    let plan: AggregatePlan
    private var count = 0
    private var numbers: [Datum] = []
    private var best: Datum?
    private var items: [Datum] = []
    private var seen: Set<HashKey> = []

    init(_ plan: AggregatePlan) { self.plan = plan }

    mutating func add(_ value: Datum?) {
        if plan.argument == nil {  // COUNT(*)
            count += 1
            return
        }
        guard let value else { return }
        if plan.distinct && !seen.insert(HashKey(value)).inserted { return }
        switch plan.kind {
        // COUNT(x) counts every value x has, null included (LiteCore's SQL count() skips only
        // MISSING, which is SQL NULL there).
        case .count: count += 1
        case .sum, .avg: if value.kind == .number { numbers.append(value) }
        case .min, .max:
            guard !value.isNull else { return }
            if let current = best {
                let order = ValueOrder.compare(value, current)
                if plan.kind == .min ? order < 0 : order > 0 { best = value }
            } else {
                best = value
            }
        case .arrayAgg: items.append(value)
        }
    }

    /// COUNT of nothing is 0, SUM 0; AVG, MIN and MAX of nothing are null.
    var result: Datum? {
        switch plan.kind {
        case .count: return .int(Int64(count))
        case .sum: return FunctionLibrary.sum(numbers)
        case .avg:
            guard !numbers.isEmpty else { return .null }
            return .number(numbers.compactMap(\.number).reduce(0, +) / Double(numbers.count))
        case .min, .max: return best ?? .null
        case .arrayAgg: return .array(items)
        }
    }
}
