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
/// query goes through ``Executor``. `explain()` says which one runs (``explanation(_:context:now:)``).
///
/// An ordered walk whose every column is the id or an ORDER BY path reads no document at all when
/// none can have expired: the walk's index holds each ORDER BY value in its entries, and strings,
/// booleans and null come back from the key exactly (``IndexKey/exactScalar(in:at:)``); a row
/// whose key does not give its values back (numbers, containers, cut keys) is read from its
/// document as before. An index-only scan, as SQLite runs a covering index.
///
/// A class: each execution then takes one reference to it, where a struct of these fields was
/// copied field by field (some fifteen retains and releases).
final class DirectIndexLookup: Sendable {
    private let plan: QueryPlan
    private let scan: IndexedScan
    private let paths: AccessPathCache
    private let term: IndexTerm
    /// The slot of the parameter that is the comparison's whole constant (`= $email`), read
    /// straight from the execution's values: a lookup then makes no evaluation context.
    private let parameterSlot: Int?
    /// Whether an execution evaluates anything: a bound that is not one parameter, LIMIT, OFFSET.
    private let needsContext: Bool
    private let projection: InPlaceProjection
    /// How each column is read from an index entry alone, when every column can be: nil when
    /// some column needs the document (see ``EntryColumn``).
    private let entryColumns: [EntryColumn]?

    /// A column an ordered walk can read from the index entry, without the document: the id,
    /// or a path that is also an ORDER BY key (the walk's index has that key as a column, so
    /// every entry holds the document's value of it, exactly when ``IndexKey/exactScalar(in:at:)``
    /// gives it back).
    enum EntryColumn {
        case id
        /// The value of ORDER BY key `key` (``QueryPlan/order``).
        case orderKey(Int)
    }

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
        parameterSlot = term.parameter.flatMap { plan.parameterOrder.firstIndex(of: $0) }
        needsContext = parameterSlot == nil || plan.limit != nil || plan.offset != nil
        self.projection = projection
        entryColumns = Self.entryColumns(projection, plan.order)
    }

    private static func entryColumns(_ projection: InPlaceProjection, _ order: [OrderKey]) -> [EntryColumn]? {
        var columns: [EntryColumn] = []
        for (position, column) in projection.columns.enumerated() {
            switch column {
            case .id: columns.append(.id)
            case .path:
                // ORDER BY a path a column reads takes that column (``OrderKey/column``): only
                // then are the two the same expression, the one the walk's index has.
                guard let key = order.firstIndex(where: { $0.column == position && $0.collation == Collation() }) else { return nil }
                columns.append(.orderKey(key))
            }
        }
        return columns
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

    /// What `explain()` says of an execution in `snapshot` at `now` with the parameters of
    /// `context`: nil when it does not run here, else whether it reads rows from index entries.
    func explanation(_ snapshot: StoreSnapshot, context: EvaluationContext, now: UInt64) throws -> String? {
        guard let choice = try scan.choose(snapshot, context), runs(choice) else { return nil }
        if case .ordered = choice, try readsEntries(snapshot, now: now) {
            return "DIRECT LOOKUP (one index walk; string, boolean and null columns read from the index entries)"
        }
        return "DIRECT LOOKUP (one index walk, rows projected in place)"
    }

    /// Whether an ordered walk at `now` makes rows from index entries without the documents:
    /// every entry of a ready index belongs to a live document (deleted ones have none), which a
    /// reader sees unless it has expired; with no expiration due by `now` in the whole file, only
    /// design documents are left to pass over.
    private func readsEntries(_ snapshot: StoreSnapshot, now: UInt64) throws -> Bool {
        guard entryColumns != nil else { return false }
        return try !snapshot.anyExpiration(dueBy: now)
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

    /// The bound of this execution: its value read from `slots` when the constant is one
    /// parameter, else computed by the term's evaluator in `context` (made by `makeContext`).
    private func bound(_ slots: [Datum?], _ makeContext: () -> EvaluationContext) throws -> Bound {
        let value: Datum?
        if let parameterSlot, parameterSlot < slots.count {
            value = slots[parameterSlot]
        } else {
            switch term.predicate {
            case .equal(let evaluator): value = try evaluator(makeContext())
            case .range(let lower?, nil): value = try lower(makeContext())
            case .range(nil, let upper?): value = try upper(makeContext())
            default: return .other
            }
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
        // A lookup by one parameter without LIMIT or OFFSET evaluates nothing: no context, but
        // for the first planning of the scan.
        let madeContext = needsContext ? EvaluationContext(constantsOf: plan, slots: slots) : nil
        func context() -> EvaluationContext { madeContext ?? EvaluationContext(constantsOf: plan, slots: slots) }
        let text: String
        switch try bound(slots, context) {
        case .nothing:
            try reader.checkUsable(scan.collection)
            return []
        case .other: return nil
        case .string(let string): text = string
        }
        let limit = try plan.limit.map { try Executor.count($0, context(), "LIMIT") }
        let offset = try plan.offset.map { try Executor.count($0, context(), "OFFSET") } ?? 0
        // The rows kept: the first `offset + limit` (saturating), as ``Executor/Sink`` keeps.
        let (sum, overflow) = offset.addingReportingOverflow(limit ?? 0)
        let wanted = limit == nil || overflow ? Int.max : sum
        let now = reader.clock.nowMilliseconds()
        let projection = projection
        // The collection is not checked against the catalog (``StoreReader/checkUsable(_:)``)
        // before reading: deleting a collection drops its index definitions in the same commit,
        // so a snapshot in which it has ready indexes is one in which it exists; without them
        // the query goes through ``Executor``, which checks.
        let rows = try reader.read { snapshot -> [[Datum?]]? in
            let indexes = try snapshot.indexes(scan.collection, readyOnly: true)
            guard !indexes.isEmpty else { return nil }
            var path = paths.path(for: indexes)
            if path == nil {  // planned by the scan, which keeps the path for these indexes
                _ = try scan.choose(snapshot, context())
                path = paths.path(for: indexes)
            }
            switch path {
            case .term(let index)? where plan.order.isEmpty && !index.isArray:
                if case .equal = term.predicate {
                    return try lookUp(text, in: index, snapshot, reader, now: now, wanted: wanted)
                }
                let kept = Rows(wanted: wanted)
                let bounds = range(index, text)
                try IndexedScan.forEachStoredDocument(
                    in: CollectionOfOne((bounds.lower, bounds.upper)), snapshot, scan.collection, now: now
                ) {
                    try kept.append(projection.project($0), reader, exact: true)
                }
                return kept.rows
            case .ordered(let index, let groupColumns, let descending)?:
                return try walk(
                    index, groupColumns: groupColumns, descending: descending, from: text, snapshot, reader, now: now, wanted: wanted)
            default:
                return nil
            }
        }
        guard let rows else { return nil }
        if offset == 0 && rows.count <= wanted { return rows }
        return Array(rows.prefix(wanted).dropFirst(offset))
    }

    /// The rows of the documents whose entries in `index` have `text` as first value, in id
    /// order, up to `wanted`: the index probed with a key built on the stack.
    private func lookUp(
        _ text: String, in index: CompiledIndex, _ snapshot: StoreSnapshot, _ reader: StoreReader, now: UInt64, wanted: Int
    ) throws -> [[Datum?]] {
        var rows: [[Datum?]] = []
        try IndexKey.withStringKey(prefix: index.entriesPrefix, text) { key in
            try IndexedScan.forEachStoredDocument(startingWith: key, snapshot, scan.collection, now: now) { document in
                try Rows.checkInterruption(reader, visited: rows.count + 1)
                rows.append(projection.project(document))
                return rows.count < wanted
            }
        }
        return rows
    }

    /// The rows of an ordered walk of `index` from (or up to) `text`, in ORDER BY order, until
    /// `wanted` are kept and their last tie group is complete.
    private func walk(
        _ index: CompiledIndex, groupColumns: Int, descending: Bool, from text: String, _ snapshot: StoreSnapshot,
        _ reader: StoreReader, now: UInt64, wanted: Int
    ) throws -> [[Datum?]] {
        let kept = Rows(wanted: wanted)
        let projection = projection
        let order = ScanOrder()
        func keep(_ document: StoredDocument) throws -> Bool {
            try kept.append(projection.project(document), reader, exact: order.exact)
        }
        let bounds = range(index, text)
        var walked = IndexPlanner.Range(index: index, lower: bounds.lower, upper: bounds.upper, terms: term.text)
        walked.inIndexOrder = true
        walked.descending = descending
        walked.decidesWhere = true
        let fromEntries = try readsEntries(snapshot, now: now)
        // ORDER BY key 0 is column `groupColumns - order.count` of the index (the walk's
        // equality prefix comes before it).
        let firstKeyColumn = groupColumns - plan.order.count
        try scan.walkOrdered(
            walked, groupColumns: groupColumns, descending: descending, snapshot, order: order,
            isSatisfied: { kept.rows.count >= wanted }
        ) { id, group in
            if fromEntries, let columns = entryColumns {
                if id.utf8.first == UInt8(ascii: "_"), id.hasPrefix("_design/") { return true }
                if let row = Self.row(columns, id, group, firstKeyColumn: firstKeyColumn) {
                    return try kept.append(row, reader, exact: order.exact)
                }
            }
            return try IndexedScan.fetch(id, snapshot, scan.collection, now: now, keep)
        }
        if !order.exact { kept.rows = sorted(kept.rows) }
        return kept.rows
    }

    /// The row of the entry of document `id` whose group key bytes are `group`, or nil when a
    /// column's value is not given back exactly by the key (a number, a container, a cut key).
    private static func row(_ columns: [EntryColumn], _ id: String, _ group: [UInt8], firstKeyColumn: Int) -> [Datum?]? {
        group.withUnsafeBytes { bytes -> [Datum?]? in
            // Made by `map`, specialized here: `Array(repeating:count:)` and
            // `init(unsafeUninitializedCapacity:)` allocate through the standard library's
            // unspecialized entry point, a metadata look-up per row.
            var complete = true
            let row = columns.map { column -> Datum? in
                switch column {
                case .id: return .string(id)
                case .orderKey(let key):
                    var offset = 0
                    for _ in 0..<(firstKeyColumn + key) {
                        guard let next = IndexKey.end(of: bytes, at: offset) else {
                            complete = false
                            return nil
                        }
                        offset = next
                    }
                    guard let exact = IndexKey.exactScalar(in: bytes, at: offset) else {
                        complete = false
                        return nil
                    }
                    return exact
                }
            }
            return complete ? row : nil
        }
    }

    /// The rows an execution keeps, changed from inside LMDB's scan callback: a class whose
    /// fields skip the runtime exclusivity checks (as captured `var`s they were boxes checked at
    /// every use). Only the execution that made it uses it, on one thread.
    private final class Rows {
        let wanted: Int
        @exclusivity(unchecked) var rows: [[Datum?]] = []
        @exclusivity(unchecked) var visited = 0

        /// As ``Executor/Interruption`` checks, before row number `visited` (from 1): a close
        /// or a cancellation stops a long walk.
        static func checkInterruption(_ reader: StoreReader, visited: Int) throws {
            try reader.checkOpen()
            if visited % 64 == 0, Task.isCancelled { throw CancellationError() }
        }

        init(wanted: Int) {
            self.wanted = wanted
            if wanted <= 64 { rows.reserveCapacity(wanted) }
        }

        /// Keeps `row`; whether the walk goes on (`exact`: every tie group so far was exact,
        /// ``ScanOrder/exact``).
        func append(_ row: [Datum?], _ reader: StoreReader, exact: Bool) throws -> Bool {
            visited &+= 1
            try Self.checkInterruption(reader, visited: visited)
            rows.append(row)
            // An inexact tie group (cut keys, numbers beyond 2^53) is sorted after: the walk
            // then goes on to the end of its first column, as the executor's does.
            return rows.count < wanted || !exact
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
