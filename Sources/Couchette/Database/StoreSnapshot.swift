/// One consistent view of a database (one LMDB read transaction): what the layers above
/// Database/ may read — documents, the records of a collection in order, revision trees, changes
/// since a sequence, the indexes — and nothing they could write with.
///
/// It lives only inside ``StoreReader/read(_:)``, on the caller's thread; every read goes
/// through ``DocumentStore``, so the visibility rule and the key layout stay in one place.
///
/// ```swift
/// let title = try reader.read { snapshot in
///     try snapshot.document(spec, "task-1", now: reader.clock.nowMilliseconds())?.string(forKey: "title")
/// }
/// ```
struct StoreSnapshot {
    private let txn: ReadTransaction
    private let store: DocumentStore
    private let indexRegistry: IndexRegistry

    init(txn: ReadTransaction, store: DocumentStore, indexes: IndexRegistry) {
        self.txn = txn
        self.store = store
        self.indexRegistry = indexes
    }

    /// The LMDB transaction id this snapshot reads at: equal ids, equal contents.
    var transactionID: UInt64 { txn.id }

    /// Every collection, as stored in this snapshot.
    func collections() throws -> [CollectionSpec] {
        try Catalog.load(txn, tables: store.tables)
    }

    // MARK: - Documents

    /// The stored record of `id`, tombstones and expired documents included.
    func record(_ collection: CollectionSpec, _ id: String) throws -> DocumentRecord? {
        try store.record(txn, collection, id)
    }

    /// The record of `id` when a reader may see it (``DocumentRecord/isVisible(now:includingDeleted:)``).
    func visibleRecord(
        _ collection: CollectionSpec, _ id: String, now: UInt64,
        includingDeleted: Bool = false
    ) throws -> DocumentRecord? {
        try store.visibleRecord(txn, collection, id, now: now, includingDeleted: includingDeleted)
    }

    /// Calls `body` with the visible record of `id` (body left empty) and its encoded body read in
    /// place, valid only inside `body`; nil when the document is not visible.
    func withVisibleRecord<R>(
        _ collection: CollectionSpec, _ id: String, now: UInt64, includingDeleted: Bool = false,
        _ body: (DocumentRecord, UnsafeRawBufferPointer) throws -> R
    ) throws -> R? {
        try store.withVisibleRecord(txn, collection, id, now: now, includingDeleted: includingDeleted, body)
    }

    /// The live document `id` (with `includingDeleted`, also its tombstone), or nil.
    func document(_ collection: CollectionSpec, _ id: String, now: UInt64, includingDeleted: Bool = false) throws -> Document? {
        try store.document(txn, collection, id, now: now, includingDeleted: includingDeleted)
    }

    /// Calls `body` with every visible record of `collection` in document-id order, until it
    /// returns false; records whose encoded body `skipping` rejects (read in place) are passed over
    /// without being copied.
    func forEachVisibleRecord(
        _ collection: CollectionSpec, now: UInt64, includingDeleted: Bool,
        skipping rejects: ((UnsafeRawBufferPointer) -> Bool)? = nil,
        _ body: (String, DocumentRecord) throws -> Bool
    ) throws {
        try store.forEachVisibleRecord(txn, collection, now: now, includingDeleted: includingDeleted, skipping: rejects, body)
    }

    /// The revision tree of `id` (empty when the document does not exist).
    func revisionTree(_ collection: CollectionSpec, _ id: String) throws -> RevisionTree {
        try store.revisionTree(txn, collection, id)
    }

    func liveCount(_ collection: CollectionSpec) throws -> UInt64 { try store.liveCount(txn, collection) }

    func lastSequence(_ collection: CollectionSpec) throws -> UInt64 { try store.lastSequence(txn, collection) }
    /// Purges the collection has seen (expired documents' included): purges leave no sequence entry.
    func purgeCount(_ collection: CollectionSpec) throws -> UInt64 { try store.purgeCount(txn, collection) }

    /// Tombstones and bytes of current records (CouchDB's `doc_del_count` and `sizes`).
    func statistics(_ collection: CollectionSpec) throws -> (deleted: UInt64, recordBytes: UInt64) {
        try store.statistics(txn, collection)
    }

    /// The earliest stored expiration of any document, in milliseconds since 1970.
    func nextExpiration() throws -> UInt64? { try store.nextExpiration(txn) }

    /// Whether any document (of any collection) may have expired by `now`: false when no stored
    /// expiration is due, found without a cursor when none is set at all (the common case, asked
    /// per execution by index-only walks).
    func anyExpiration(dueBy now: UInt64) throws -> Bool {
        if try txn.isEmpty(store.tables.expirations) { return false }
        return try store.nextExpiration(txn).map { $0 <= now } ?? false
    }

    /// Calls `body` with the sequence, document id and deleted flag of every change of
    /// `collection` after `sequence` up to `last`, in sequence order, until it returns false.
    func forEachChange(
        _ collection: CollectionSpec, after sequence: UInt64, through last: UInt64,
        _ body: (UInt64, String, Bool) throws -> Bool
    ) throws {
        try store.forEachChange(txn, collection, after: sequence, through: last, body)
    }

    // MARK: - Indexes

    /// The collection's indexes, compiled; `readyOnly` leaves out those still being built.
    func indexes(_ collection: CollectionSpec, readyOnly: Bool) throws -> [CompiledIndex] {
        try indexRegistry.indexes(txn, collection, readyOnly: readyOnly)
    }

    /// The names and definitions of the collection's indexes.
    func indexDefinitions(_ collection: CollectionSpec) throws -> [IndexRegistry.Stored] {
        try indexRegistry.definitions(txn, collection)
    }

    /// The documents a full-text query finds in `index`, with their BM25 scores.
    func fullTextSearch(_ index: CompiledIndex, _ query: FullTextQuery) throws -> FullTextHits {
        let store = indexRegistry.fullTextStore(index.definition)
        return try FullTextEvaluator(
            source: StoredPostings(txn: txn, store: store),
            statistics: try store.statistics(txn)
        ).evaluate(query)
    }

    /// Reads and tokenizes documents for a full-text index build (see ``IndexRegistry/collectFullText(_:_:_:after:)``).
    func collectFullText(_ collection: CollectionSpec, _ index: CompiledIndex, after: UInt64) throws -> IndexRegistry.FullTextBatch {
        try indexRegistry.collectFullText(txn, collection, index, after: after)
    }

    /// The id of the document whose current sequence is `sequence` (nil: none, or a tombstone).
    func liveDocumentID(_ collection: CollectionSpec, sequence: UInt64) throws -> String? {
        try store.sequenceIndex.withEntry(txn, collection.number, sequence) { id, isDeleted in
            isDeleted ? nil : String(decoding: id, as: UTF8.self)
        } ?? nil
    }

    /// Calls `visit` with the key and document id of every index entry whose key starts with
    /// `prefix` (an index's entries prefix and the encoding of a first value), in key order,
    /// until it returns false.
    func forEachIndexEntry(
        startingWith prefix: UnsafeRawBufferPointer, _ visit: (UnsafeRawBufferPointer, UnsafeRawBufferPointer) throws -> Bool
    ) throws {
        try txn.scan(store.tables.indexEntries, startingWith: prefix, visit)
    }

    /// Calls `visit` with the key and document id of every index entry in `lower..<upper`, in key
    /// order (or reverse order, `descending`), until it returns false.
    func forEachIndexEntry(
        from lower: [UInt8], to upper: [UInt8]?, descending: Bool = false,
        _ visit: (UnsafeRawBufferPointer, UnsafeRawBufferPointer) throws -> Bool
    ) throws {
        if descending {
            try txn.scanBackward(store.tables.indexEntries, from: lower, to: upper, visit)
        } else {
            try txn.scan(store.tables.indexEntries, from: lower, to: upper, visit)
        }
    }
}
