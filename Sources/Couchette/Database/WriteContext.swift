/// The state of one pending write inside a commit: its transaction, the clock, the collections,
/// the changed documents, and the collection counters it has touched.
///
/// Sequence counters and live counts are read once and written once per pending write (at
/// ``flush()``) instead of once per document, which matters for a 10,000-document batch.
final class WriteContext {
    let txn: WriteTransaction
    let now: UInt64
    let collections: [UInt32: CollectionSpec]
    private let tables: StorageEnvironment.Tables
    private(set) var summary = CommitSummary()
    private var sequences: [UInt32: UInt64] = [:]
    private var countDeltas: [UInt32: Int64] = [:]

    init(txn: WriteTransaction, tables: StorageEnvironment.Tables, now: UInt64, collections: [UInt32: CollectionSpec]) {
        self.txn = txn
        self.tables = tables
        self.now = now
        self.collections = collections
    }

    func recordChange(_ collection: CollectionSpec, _ id: String) {
        summary.record(collection, id)
    }

    func nextSequence(_ collection: CollectionSpec) throws -> UInt64 {
        let last =
            try sequences[collection.number]
            ?? StoreLayout.decodeUInt64(try txn.get(tables.meta, key: StoreLayout.sequenceCounterKey(collection.number)))
        sequences[collection.number] = last + 1
        summary.recordSequence(collection.number, last + 1)
        return last + 1
    }

    func adjustCount(_ collection: CollectionSpec, by delta: Int64) {
        countDeltas[collection.number, default: 0] += delta
        summary.recordCountChange(collection.number, by: delta)
    }

    /// Writes the counters back; call once the pending write's operations have all succeeded.
    func flush() throws {
        for (number, sequence) in sequences {
            try txn.put(tables.meta, key: StoreLayout.sequenceCounterKey(number), value: StoreLayout.encodeUInt64(sequence))
        }
        for (number, delta) in countDeltas where delta != 0 {
            let key = StoreLayout.countKey(number)
            let count = Int64(StoreLayout.decodeUInt64(try txn.get(tables.meta, key: key))) + delta
            try txn.put(tables.meta, key: key, value: StoreLayout.encodeUInt64(UInt64(max(0, count))))
        }
        sequences.removeAll()
        countDeltas.removeAll()
    }
}
