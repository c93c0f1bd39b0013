/// An index nested-loop join: for each outer row, the joined documents whose indexed value equals
/// the outer side of the ON equality are found by one range of a value index on the joined
/// collection, instead of reading (and hashing) the whole collection.
///
/// Chosen at each execution, like the main scan's index (``IndexedScan``): a built, non-partial
/// value index whose first column is the join's inner expression. The candidates are read back
/// in id order — the order a full scan, and so the hash join and the nested loop, deliver them
/// — and the whole ON clause is still evaluated on each, so index keys that are not exact
/// (numbers beyond 2^53, cut long strings) only cost a candidate, never a wrong row.
///
/// ```swift
/// // SELECT … FROM orders AS o JOIN people AS p ON p.email = o.buyer, with an index on email:
/// if let join = try IndexJoin.choose(snapshot, people, innerKey: ".\"email\"", includeDeleted: false) {
///     try join.forEachCandidate(snapshot, equalTo: .string("ann@example.com"), now: now) { binding in true }
/// }
/// ```
struct IndexJoin {
    let index: CompiledIndex
    let collection: CollectionSpec

    /// The index to probe for a join on `innerKey`, or nil (then the join hashes). A source
    /// whose deleted documents are visible is never served by an index, which holds only live
    /// ones.
    static func choose(
        _ snapshot: StoreSnapshot, _ collection: CollectionSpec, innerKey: String?, includeDeleted: Bool
    ) throws -> IndexJoin? {
        guard let innerKey, !includeDeleted else { return nil }
        let usable = try snapshot.indexes(collection, readyOnly: true).first { index in
            index.definition.kind == .value && index.whereKeys == [] && index.columnKeys.first == innerKey
        }
        return usable.map { IndexJoin(index: $0, collection: collection) }
    }

    /// Calls `body` with each visible document whose indexed value may equal `value`, in id
    /// order, until it returns false. MISSING matches nothing (the ON equality is MISSING then).
    func forEachCandidate(
        _ snapshot: StoreSnapshot, equalTo value: Datum?, now: UInt64, _ body: (SourceBinding) throws -> Bool
    ) throws {
        guard let value else { return }
        let range = IndexPlanner.keyRange(index, IndexPlanner.pointTuple(value))
        try IndexedScan.forEachDocument(in: [range], snapshot, collection, now: now, body)
    }
}
