/// The state of one pending write inside a commit — or of a whole group of pending writes, when
/// they are applied without nested transactions: its transaction, the clock, the collections,
/// the changed documents, and the collection counters it has touched.
///
/// Sequence counters and live counts are read once and written once per context (at
/// ``flush()``) instead of once per document, which matters for a 10,000-document batch and for
/// a group commit of single saves. They are kept in a short list, not in dictionaries: a commit
/// touches one collection or a few, and every dictionary a commit fills costs an allocation and
/// hashing on the writer, where concurrent savers wait for it.
///
/// Unchecked exclusivity on its mutable state: a context is used by the one thread that runs its
/// write transaction, inside one synchronous call, and no access overlaps another (each is a
/// read or an update done before the next begins). The runtime checks cost more than the
/// updates themselves, several per document on the writer.
final class WriteContext {
    let txn: WriteTransaction
    let now: UInt64
    let collections: [UInt32: CollectionSpec]
    /// Whether changed ids are collected: only while someone observes commits.
    let recordsIDs: Bool
    private let tables: StorageEnvironment.Tables
    @exclusivity(unchecked) private(set) var summary = CommitSummary()
    /// Per collection, the first sequence the commit assigned before this pending write, then
    /// also this write's first: a document whose previous record has a sequence from there on was
    /// already written, and recorded, in this commit. Kept only while ids are recorded
    /// (``recordsIDs``), the one use of it.
    @exclusivity(unchecked) private(set) var commitStart: [UInt32: UInt64]
    /// The counters of each collection this context has touched, in the order first touched.
    @exclusivity(unchecked) private var counters: [CollectionCounters] = []
    /// The entry of ``counters`` whose collection ``nextSequence(_:)`` served last: a batch writes
    /// one collection after another, so the next document is usually of the same one.
    @exclusivity(unchecked) private var currentCounters = 0
    /// Whether any secondary index exists in this transaction (``DocumentIndexing/maintainsEntries(_:)``),
    /// once asked: no write of a commit defines or drops an index, so the answer holds for all its
    /// writes (index definitions commit in transactions of their own, see ``Database/writeIndexes(in:usingReserve:_:)``).
    @exclusivity(unchecked) var maintainsIndexes: Bool?
    /// The collection ``isCurrent(_:)`` last found current: the writes of a commit are usually all
    /// of one collection.
    @exclusivity(unchecked) private var lastCurrent: CollectionSpec?

    /// What the context changed in one collection's counters.
    private struct CollectionCounters {
        let number: UInt32
        /// The first and last sequences assigned here; `first` is 0 while none is.
        var first: UInt64 = 0
        var last: UInt64 = 0
        var countDelta: Int64 = 0
        var purges: UInt64 = 0
        /// Whether the collection's sequence entries go straight to the `sequences` table (see
        /// ``SequenceIndex``): set once this context moved the collection's tail there.
        var bypassesSequenceTail = false
    }

    init(
        txn: WriteTransaction, tables: StorageEnvironment.Tables, now: UInt64, collections: [UInt32: CollectionSpec],
        recordsIDs: Bool = true, commitStart: [UInt32: UInt64] = [:]
    ) {
        self.txn = txn
        self.tables = tables
        self.now = now
        self.collections = collections
        self.recordsIDs = recordsIDs
        self.commitStart = commitStart
    }

    /// Whether `collection` is the one the catalog of this transaction (``collections``) has
    /// under its number: a `Collection` object may have outlived its collection.
    func isCurrent(_ collection: CollectionSpec) -> Bool {
        if let lastCurrent, lastCurrent == collection { return true }
        guard collections[collection.number] == collection else { return false }
        lastCurrent = collection
        return true
    }

    /// Records that document `id` changed; `previous` is the sequence of the record it replaced
    /// or purged (nil: there was none).
    func recordChange(_ collection: CollectionSpec, _ id: String, replacing previous: UInt64?) {
        guard recordsIDs else { return }
        if let previous, let start = commitStart[collection.number], previous >= start { return }  // listed already
        summary.record(collection, id)
    }

    /// Records that document `id` was purged (its record had sequence `previous`).
    func recordPurge(_ collection: CollectionSpec, _ id: String, replacing previous: UInt64) {
        guard recordsIDs else { return }
        summary.recordPurge(collection, id, listed: commitStart[collection.number].map { previous >= $0 } ?? false)
    }

    /// Counts a purge, asked for or of an expired document (``StoreLayout/purgeCountKey(_:)``).
    func countPurge(_ collection: CollectionSpec) {
        counters[index(of: collection.number)].purges += 1
    }

    func nextSequence(_ collection: CollectionSpec) throws -> UInt64 {
        let index = self.index(of: collection.number)
        currentCounters = index
        if counters[index].first == 0 {
            // Read through the kept cursor of the counters' table, which ``flush()`` then finds
            // standing on the key it rewrites.
            let last = try StoreLayout.withCounterKey(StoreLayout.sequenceCounterPrefix, collection.number) {
                StoreLayout.decodeUInt64(try txn.getNear(tables.counters, key: $0))
            }
            counters[index].first = last + 1
            counters[index].last = last
            if recordsIDs && commitStart[collection.number] == nil { commitStart[collection.number] = last + 1 }
        }
        counters[index].last += 1
        return counters[index].last
    }

    /// Whether this context appends collection `number`'s sequence entries to the `sequences`
    /// table directly, its tail moved there and left empty (``SequenceIndex/replace(_:_:removing:adding:isDeleted:id:)``).
    func bypassesSequenceTail(_ number: UInt32) -> Bool {
        counters[index(of: number)].bypassesSequenceTail
    }

    /// Has this context append collection `number`'s further sequence entries to the table; call
    /// once its tail is empty.
    func bypassSequenceTail(_ number: UInt32) {
        counters[index(of: number)].bypassesSequenceTail = true
    }

    func adjustCount(_ collection: CollectionSpec, by delta: Int64) {
        counters[index(of: collection.number)].countDelta += delta
    }

    /// The entry of ``counters`` for collection `number`, added when missing.
    private func index(of number: UInt32) -> Int {
        if currentCounters < counters.count && counters[currentCounters].number == number { return currentCounters }
        if let index = counters.firstIndex(where: { $0.number == number }) { return index }
        counters.append(CollectionCounters(number: number))
        return counters.count - 1
    }

    /// Writes the counters back and adds them to ``summary``; call once the pending write's
    /// operations have all succeeded.
    ///
    /// The counters live in the main database, a small table: they are read and rewritten through
    /// its kept cursor (``WriteTransaction/getNear(_:key:)``, ``WriteTransaction/replaceNear(_:key:count:writing:)``),
    /// which finds them on the page it stands on instead of descending from the root for each.
    /// Keys and values are built on the stack (see ``StoreLayout/withCounterKey(_:_:_:)``).
    func flush() throws {
        for counter in counters {
            let number = counter.number
            if counter.first != 0 {
                try StoreLayout.withCounterKey(StoreLayout.sequenceCounterPrefix, number) { key in
                    try txn.replaceNear(tables.counters, key: key, count: 8) {
                        $0.storeBytes(of: counter.last.bigEndian, as: UInt64.self)
                    }
                }
                summary.recordSequences(number, counter.first...counter.last)
            }
            if counter.countDelta != 0 {
                try StoreLayout.withCounterKey(StoreLayout.countPrefix, number) { key in
                    // Saturating: a count no file of ours holds must not trap the writer.
                    let stored = Int64(clamping: StoreLayout.decodeUInt64(try txn.getNear(tables.counters, key: key)))
                    let (sum, overflow) = stored.addingReportingOverflow(counter.countDelta)
                    let count = overflow ? UInt64(Int64.max) : UInt64(max(0, sum))
                    try txn.replaceNear(tables.counters, key: key, count: 8) { $0.storeBytes(of: count.bigEndian, as: UInt64.self) }
                }
                summary.recordCountChange(number, by: counter.countDelta)
            }
            if counter.purges != 0 {
                let key = StoreLayout.purgeCountKey(number)
                let total = StoreLayout.decodeUInt64(try txn.get(tables.meta, key: key)) &+ counter.purges
                try txn.put(tables.meta, key: key, value: StoreLayout.encodeUInt64(total), replacing: true)
                summary.recordPurges(number, counter.purges)
            }
        }
        counters.removeAll(keepingCapacity: true)
        currentCounters = 0
    }
}
