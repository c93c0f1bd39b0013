/// The state of one pending write inside a commit — or of a whole group of pending writes, when
/// they are applied without nested transactions: its transaction, the clock, the collections,
/// the changed documents, and the collection counters it has touched.
///
/// Sequence counters and live counts are read once and written once per context (at
/// ``flush()``) instead of once per document, which matters for a 10,000-document batch and for
/// a group commit of single saves.
final class WriteContext {
    let txn: WriteTransaction
    let now: UInt64
    let collections: [UInt32: CollectionSpec]
    /// Whether changed ids are collected: only while someone observes commits.
    let recordsIDs: Bool
    private let tables: StorageEnvironment.Tables
    private(set) var summary = CommitSummary()
    /// Per collection, the first sequence the commit assigned before this pending write, then
    /// also this write's first: a document whose previous record has a sequence from there on was
    /// already written, and recorded, in this commit.
    private(set) var commitStart: [UInt32: UInt64]
    private var firstSequences: [UInt32: UInt64] = [:]
    private var sequences: [UInt32: UInt64] = [:]
    private var countDeltas: [UInt32: Int64] = [:]
    private var purges: [UInt32: UInt64] = [:]

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
        purges[collection.number, default: 0] += 1
    }

    func nextSequence(_ collection: CollectionSpec) throws -> UInt64 {
        // A batch writes one collection after another: its counter stays out of the dictionary
        // (two hashed lookups a document) until another collection is written or at flush.
        if collection.number == current.number {
            current.sequence += 1
            return current.sequence
        }
        parkCurrent()
        let last =
            try sequences[collection.number]
            ?? StoreLayout.withCounterKey(StoreLayout.sequenceCounterPrefix, collection.number) {
                StoreLayout.decodeUInt64(try txn.get(tables.counters, key: $0))
            }
        if firstSequences[collection.number] == nil {
            firstSequences[collection.number] = last + 1
            if commitStart[collection.number] == nil { commitStart[collection.number] = last + 1 }
        }
        current = (collection.number, last + 1)
        return last + 1
    }

    /// The collection whose sequence counter ``nextSequence(_:)`` keeps at hand, and its last sequence.
    private var current: (number: UInt32?, sequence: UInt64) = (nil, 0)

    private func parkCurrent() {
        if let number = current.number { sequences[number] = current.sequence }
        current = (nil, 0)
    }

    func adjustCount(_ collection: CollectionSpec, by delta: Int64) {
        countDeltas[collection.number, default: 0] += delta
    }

    /// Writes the counters back and adds them to ``summary``; call once the pending write's
    /// operations have all succeeded.
    ///
    /// The counters are put without trying an append first (`replacing: true`): their keys are
    /// never the last of their table (in the main database the table names `sequences`, `meta`
    /// … sort after them; in `meta`, `uuid`), so an append would descend to the last key only to
    /// be refused, on every commit. Keys and values are built on the stack (see
    /// ``StoreLayout/withCounterKey(_:_:_:)``).
    func flush() throws {
        parkCurrent()
        for (number, sequence) in sequences {
            try StoreLayout.withCounterKey(StoreLayout.sequenceCounterPrefix, number) { key in
                try withUnsafeBytes(of: sequence.bigEndian) { try txn.put(tables.counters, key: key, value: $0, replacing: true) }
            }
            if let first = firstSequences[number] { summary.recordSequences(number, first...sequence) }
        }
        for (number, delta) in countDeltas where delta != 0 {
            try StoreLayout.withCounterKey(StoreLayout.countPrefix, number) { key in
                let count = UInt64(max(0, Int64(StoreLayout.decodeUInt64(try txn.get(tables.counters, key: key))) + delta))
                try withUnsafeBytes(of: count.bigEndian) { try txn.put(tables.counters, key: key, value: $0, replacing: true) }
            }
            summary.recordCountChange(number, by: delta)
        }
        for (number, purged) in purges {
            let key = StoreLayout.purgeCountKey(number)
            let total = StoreLayout.decodeUInt64(try txn.get(tables.meta, key: key)) &+ purged
            try txn.put(tables.meta, key: key, value: StoreLayout.encodeUInt64(total), replacing: true)
            summary.recordPurges(number, purged)
        }
        sequences.removeAll()
        firstSequences.removeAll()
        countDeltas.removeAll()
        purges.removeAll()
    }
}
