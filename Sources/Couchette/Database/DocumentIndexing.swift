/// The seam through which every write keeps secondary indexes current (the query layer's
/// ``IndexRegistry`` implements it).
///
/// ``DocumentStore`` calls ``update(_:_:_:old:new:)`` wherever it writes or removes a document's
/// current record, in the same transaction, so an index never disagrees with a committed state.
protocol DocumentIndexing: Sendable {
    /// Replaces the index entries of `id` computed from `old` (the record before the write, nil
    /// when there was none) by those computed from `new` (nil when the record is removed).
    func update(
        _ txn: WriteTransaction, _ collection: CollectionSpec, _ id: String,
        old: DocumentRecord?, new: DocumentRecord?) throws

    /// Whether any index exists (in any collection): when none does, ``update(_:_:_:old:new:)``
    /// reads nothing of the records, and a write need not copy the old body out of the map.
    func maintainsEntries(_ txn: WriteTransaction) throws -> Bool

    /// Removes every index of a collection that is being deleted.
    func dropCollection(_ txn: WriteTransaction, _ collection: CollectionSpec) throws
}
