#if canImport(Glibc)
import Glibc
#endif

/// The main scan of a query whose WHERE or ORDER BY an index might serve: at each execution the
/// ``IndexPlanner`` picks from the collection's current (built) indexes; without a usable one it
/// is a ``CollectionScan``.
///
/// Documents found through index ranges are read back in id order, so results (and their order
/// without ORDER BY) are exactly those of a full scan. In index-order mode, entries are read in
/// ORDER BY order, each tie group in id order, until the executor has its `LIMIT` rows.
struct IndexedScan: DocumentScan {
    let collection: CollectionSpec
    let analysis: IndexAnalysis
    /// The index the last execution chose, while the collection's built indexes stay the same:
    /// a prepared query then plans nothing per execution (see ``IndexPlanner/pathIsStatic(_:)``).
    let paths: AccessPathCache?

    init(collection: CollectionSpec, analysis: IndexAnalysis) {
        self.collection = collection
        self.analysis = analysis
        paths = IndexPlanner.pathIsStatic(analysis) ? AccessPathCache() : nil
    }

    var fullScan: CollectionScan { CollectionScan(collection: collection, includeDeleted: false) }

    var description: String { "SCAN \(collection.fullName) (or an index chosen at run time)" }

    /// The ranges this execution reads, with the index kept from the last planning when the
    /// indexes are the same; nil for a full scan.
    func choose(_ snapshot: StoreSnapshot, _ context: EvaluationContext) throws -> IndexPlanner.Choice? {
        let indexes = try snapshot.indexes(collection, readyOnly: true)
        guard !indexes.isEmpty else { return nil }
        guard let paths else { return try IndexPlanner(analysis: analysis, indexes: indexes, context: context).choose() }
        if let path = paths.path(for: indexes) {
            return try IndexPlanner(analysis: analysis, indexes: [], context: context).instantiate(path)
        }
        let choice = try IndexPlanner(analysis: analysis, indexes: indexes, context: context).choose()
        if let path = IndexPlanner.path(of: choice) { paths.keep(path, for: indexes) }
        return choice
    }

    func explain(_ snapshot: StoreSnapshot, context: EvaluationContext) throws -> String {
        switch try choose(snapshot, context) {
        case nil: return fullScan.description
        case .union(let ranges) where ranges.isEmpty:
            return "NO SCAN of \(collection.fullName) (the WHERE matches nothing)"
        case .union(let ranges):
            var lines: [String] = []
            for text in ranges.map(\.text) where !lines.contains(text) { lines.append(text) }
            let head = "INDEX SCAN \(collection.fullName) USING "
            return lines.count == 1 ? head + lines[0] : head + "UNION OF " + lines.joined(separator: " | ")
        case .ordered(let range, _, _):
            return "INDEX SCAN \(collection.fullName) USING \(range.text)"
        }
    }

    /// Calls `body` with each visible document that has an entry in one of the key `ranges`,
    /// once, in id order (the order of a full scan), until it returns false.
    static func forEachDocument(
        in ranges: some Sequence<([UInt8], [UInt8])>, _ snapshot: StoreSnapshot, _ collection: CollectionSpec, now: UInt64,
        _ body: (SourceBinding) throws -> Bool
    ) throws {
        try forEachStoredDocument(in: ranges, snapshot, collection, now: now) { try body($0.binding()) }
    }

    /// ``forEachDocument(in:_:_:now:_:)`` with each document as it lies in the map.
    static func forEachStoredDocument(
        in ranges: some Sequence<([UInt8], [UInt8])>, _ snapshot: StoreSnapshot, _ collection: CollectionSpec, now: UInt64,
        _ body: (StoredDocument) throws -> Bool
    ) throws {
        try forEachStoredDocument(
            listedBy: { visit in
                for (lower, upper) in ranges { try snapshot.forEachIndexEntry(from: lower, to: upper, visit) }
            }, snapshot, collection, now: now, body)
    }

    /// ``forEachStoredDocument(in:_:_:now:_:)`` for the entries whose keys start with `prefix`
    /// (an index's entries prefix and one first value: a lookup by that value).
    static func forEachStoredDocument(
        startingWith prefix: UnsafeRawBufferPointer, _ snapshot: StoreSnapshot, _ collection: CollectionSpec, now: UInt64,
        _ body: (StoredDocument) throws -> Bool
    ) throws {
        try forEachStoredDocument(
            listedBy: { visit in try snapshot.forEachIndexEntry(startingWith: prefix, visit) }, snapshot, collection, now: now, body)
    }

    /// The documents of the index entries `listEntries` visits (it calls its argument with each
    /// entry's key and document id), once each, in id order.
    private static func forEachStoredDocument(
        listedBy listEntries: ((UnsafeRawBufferPointer, UnsafeRawBufferPointer) throws -> Bool) throws -> Void,
        _ snapshot: StoreSnapshot, _ collection: CollectionSpec, now: UInt64, _ body: (StoredDocument) throws -> Bool
    ) throws {
        // The first id apart: a point lookup's one document needs no list (ids up to 15 bytes
        // are Strings without storage of their own).
        var first: String?
        var more: [String] = []
        try listEntries { _, id in
            let text = String(decoding: id, as: UTF8.self)
            if first == nil { first = text } else { more.append(text) }
            return true
        }
        guard let first else { return }
        if more.isEmpty {
            _ = try fetch(first, snapshot, collection, now: now, body)
            return
        }
        // One key's ids come sorted; several keys (a range, an array index's members, an OR's
        // ranges) mix them, and may list a document more than once. Ids sort by their bytes,
        // as the documents table does (not by String's canonical equivalence).
        more.append(first)
        more.sort { $0.utf8.lexicographicallyPrecedes($1.utf8) }
        var previous: String?
        for id in more {
            if let previous, previous.utf8.elementsEqual(id.utf8) { continue }
            previous = id
            if try !fetch(id, snapshot, collection, now: now, body) { return }
        }
    }

    /// Calls `body` with the visible document `id` in place; the result of `body`, or true (go
    /// on) when the document is not visible or is a design document.
    static func fetch(
        _ id: String, _ snapshot: StoreSnapshot, _ collection: CollectionSpec, now: UInt64, _ body: (StoredDocument) throws -> Bool
    ) throws -> Bool {
        try snapshot.withVisibleRecord(collection, id, now: now) { record, stored in
            try StoredDocument.visit(id, record, stored, body)
        } ?? true
    }

    func forEach(
        _ snapshot: StoreSnapshot, now: UInt64, context: EvaluationContext,
        order: ScanOrder, isSatisfied: () -> Bool, filter: BodyFilter?, _ body: (SourceBinding) throws -> Bool
    ) throws {
        guard let choice = try choose(snapshot, context) else {
            // A full scan's records are copied once, as they come (no second copy per binding).
            return try fullScan.forEach(snapshot, now: now, context: context, order: order, isSatisfied: isSatisfied, filter: filter, body)
        }
        try walk(choice, snapshot, now: now, order: order, isSatisfied: isSatisfied) { try body($0.binding()) }
    }

    /// ``forEach(_:now:context:order:isSatisfied:filter:_:)`` with each document as it lies in
    /// the map (``StoredDocument``), valid only inside `body`. The filter is made only for a full
    /// scan, the one place it is used.
    func forEachStored(
        _ snapshot: StoreSnapshot, now: UInt64, context: EvaluationContext,
        order: ScanOrder, isSatisfied: () -> Bool, filter: () throws -> BodyFilter?, _ body: (StoredDocument) throws -> Bool
    ) throws {
        guard let choice = try choose(snapshot, context) else {
            let rejects = try filter()?.skipsRejected(reportingTo: order)
            try snapshot.forEachVisibleRecord(collection, now: now, includingDeleted: false, skipping: rejects) { id, record in
                try record.body.withUnsafeBytes { try StoredDocument.visit(id, record, $0, body) }
            }
            return
        }
        try walk(choice, snapshot, now: now, order: order, isSatisfied: isSatisfied, body)
    }

    /// Reads the documents of the index ranges `choice` names, in place.
    func walk(
        _ choice: IndexPlanner.Choice, _ snapshot: StoreSnapshot, now: UInt64, order: ScanOrder, isSatisfied: () -> Bool,
        _ body: (StoredDocument) throws -> Bool
    ) throws {
        switch choice {
        case .union(let ranges):
            order.passesWhere = ranges.count == 1 && ranges[0].decidesWhere
            try Self.forEachStoredDocument(in: ranges.lazy.map { ($0.lower, $0.upper) }, snapshot, collection, now: now, body)
        case .ordered(let range, let groupColumns, let descending):
            try walkOrdered(range, groupColumns: groupColumns, descending: descending, snapshot, order: order, isSatisfied: isSatisfied) {
                id, _ in try Self.fetch(id, snapshot, collection, now: now, body)
            }
        }
    }

    /// The ordered walk of ``walk(_:_:now:order:isSatisfied:_:)``, one index entry at a time:
    /// `visit` gets each entry's document id, in ORDER BY order and each tie group in id order,
    /// with the group's key bytes (the entry key past the index prefix, up to the end of column
    /// `groupColumns - 1`; the whole key when the group is the whole key), until it returns false.
    /// The document itself is not read: a caller that needs it fetches it (``fetch(_:_:_:now:_:)``).
    func walkOrdered(
        _ range: IndexPlanner.Range, groupColumns: Int, descending: Bool, _ snapshot: StoreSnapshot, order: ScanOrder,
        isSatisfied: () -> Bool, _ visit: (String, [UInt8]) throws -> Bool
    ) throws {
        order.inOrder = true
        order.passesWhere = range.decidesWhere
        // A tie group that is one whole key read forwards arrives in id order (LMDB keeps a
        // key's ids in byte order, the order ties are broken in): its documents are then
        // visited as their entries come, with no list of ids to sort.
        let columns = range.index.columnKeys.count
        let groupIsKey = groupColumns >= columns
        let state = OrderedWalk(streams: !descending && groupIsKey)
        try snapshot.forEachIndexEntry(from: range.lower, to: range.upper, descending: descending) { key, id in
            let tuple = UnsafeRawBufferPointer(rebasing: key[4...])
            var end = 0, firstEnd = tuple.count
            if groupIsKey {  // the whole key (a cut one included): only the first column to find
                end = tuple.count
                if columns > 1 { firstEnd = IndexKey.end(of: tuple, at: 0) ?? tuple.count }
            } else {
                for column in 0..<groupColumns {
                    guard let next = IndexKey.end(of: tuple, at: end) else { end = tuple.count; break }
                    end = next
                    if column == 0 { firstEnd = next }
                }
            }
            // An entry of the current group (equal values) is compared in place; the group's
            // bytes are copied only when a new one starts.
            let entryGroup = UnsafeRawBufferPointer(rebasing: tuple[..<end])
            if state.hasGroup, state.isGroup(entryGroup) { return try state.take(id, visit) }
            if !state.pending.isEmpty { try state.flush(visit) }
            if state.stopped { return false }
            // Every later entry sorts after every row kept so far when all groups so far
            // were exact, or when the first column changes (its bytes then differ, so
            // its values do); otherwise an inexact earlier column could still hide a
            // smaller row further on.
            let firstColumn = min(firstEnd, end)
            if state.hasGroup, isSatisfied(),
                order.exact || !state.group[..<state.firstColumnEnd].elementsEqual(tuple[..<firstColumn])
            {
                return false
            }
            state.group.removeAll(keepingCapacity: true)
            state.group.append(contentsOf: entryGroup)
            state.hasGroup = true
            if order.exact && !IndexKey.isExact(state.group, values: groupColumns) { order.exact = false }
            state.firstColumnEnd = firstColumn
            return try state.take(id, visit)
        }
        if !state.stopped && !state.pending.isEmpty { try state.flush(visit) }
    }
}

/// The state of one ordered walk (``IndexedScan/walkOrdered(_:groupColumns:descending:_:order:isSatisfied:_:)``),
/// changed from inside LMDB's scan callback. A class whose fields skip the runtime exclusivity
/// checks, as ``ScanOrder``'s do: as `var`s captured by the walk's local functions they were
/// boxes checked at every use, a fifth of the instructions of a 20-row index-only walk. Only the
/// one walk that made it uses it, on one thread, never re-entrantly.
private final class OrderedWalk {
    /// Whether entries are visited as they come (a whole key read forwards: ids in order).
    let streams: Bool
    /// The current group's bytes, in a buffer reused per group.
    @exclusivity(unchecked) var group: [UInt8] = []
    @exclusivity(unchecked) var hasGroup = false
    @exclusivity(unchecked) var firstColumnEnd = 0
    /// Ids of the current group waiting to be sorted (groups that do not stream).
    @exclusivity(unchecked) var pending: [[UInt8]] = []
    @exclusivity(unchecked) var stopped = false

    init(streams: Bool) { self.streams = streams }

    /// Whether `bytes` are the current group's.
    func isGroup(_ bytes: UnsafeRawBufferPointer) -> Bool {
        guard group.count == bytes.count else { return false }
        guard let other = bytes.baseAddress else { return true }
        return group.withUnsafeBytes { own in memcmp(own.baseAddress!, other, own.count) == 0 }
    }

    func take(_ id: UnsafeRawBufferPointer, _ visit: (String, [UInt8]) throws -> Bool) throws -> Bool {
        guard streams else {
            pending.append(Array(id))
            return true
        }
        if try !visit(String(decoding: id, as: UTF8.self), group) { stopped = true }
        return !stopped
    }

    func flush(_ visit: (String, [UInt8]) throws -> Bool) throws {
        // Still the bytes of the group these ids belong to: a new group replaces them after.
        pending.sort { $0.lexicographicallyPrecedes($1) }
        for id in pending where try !visit(String(decoding: id, as: UTF8.self), group) {
            stopped = true
            break
        }
        pending.removeAll(keepingCapacity: true)
    }
}

/// The access path of one prepared query's last planning, and the indexes it was planned for.
///
/// The key is the identity of the ready indexes: the registry hands out one ``CompiledIndex``
/// per stored definition (its bytes include the index number, which a re-created index never
/// reuses), and a ready list without the same objects in the same order is another set of
/// indexes — created, deleted, rebuilding or rebuilt — so the path is planned again.
final class AccessPathCache: Sendable {
    private let entry = Locked<(indexes: [CompiledIndex], path: IndexPlanner.AccessPath)?>(nil)

    /// The path kept for exactly these indexes, else nil.
    func path(for indexes: [CompiledIndex]) -> IndexPlanner.AccessPath? {
        entry.withLock { entry in
            guard let entry, entry.indexes.count == indexes.count,
                zip(entry.indexes, indexes).allSatisfy({ $0 === $1 })
            else { return nil }
            return entry.path
        }
    }

    func keep(_ path: IndexPlanner.AccessPath, for indexes: [CompiledIndex]) {
        entry.withLock { $0 = (indexes, path) }
    }
}
