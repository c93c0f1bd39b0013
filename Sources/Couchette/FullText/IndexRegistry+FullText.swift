/// Full-text indexes in the ``IndexRegistry``: keeping their postings current on every write,
/// building them in sequence order, clearing them.
extension IndexRegistry {
    func fullTextStore(_ definition: IndexDefinition) -> FullTextStore {
        FullTextStore(table: tables.fullText, index: definition.number)
    }

    /// Replaces a document's postings computed from `old` by those computed from `new`.
    func updateFullText(
        _ txn: WriteTransaction, _ index: CompiledIndex, _ id: String,
        old: DocumentRecord?, new: DocumentRecord?
    ) throws {
        let tokenizer = try index.makeTokenizer()
        let before = try old.flatMap { try index.fullTextTerms(id: id, record: $0, tokenizer: tokenizer) }
        let after = try new.flatMap { try index.fullTextTerms(id: id, record: $0, tokenizer: tokenizer) }
        if before == nil && after == nil { return }
        if let old, let new, old.sequence == new.sequence, before == after { return }
        let store = fullTextStore(index.definition)
        var statistics = try store.statistics(txn)
        let original = statistics
        if let old, let before, try store.remove(txn, document: old.sequence, terms: before.terms.keys) {
            statistics.documents = statistics.documents > 0 ? statistics.documents - 1 : 0
            statistics.totalLength -= min(statistics.totalLength, UInt64(before.length))
        }
        if let new, let after {
            try store.add(txn, document: new.sequence, length: after.length, terms: after.terms)
            statistics.documents += 1
            statistics.totalLength += UInt64(after.length)
        }
        if statistics != original { try store.write(statistics, txn) }
    }

    /// Starts a full-text index: empty, to be built up to the collection's current last sequence.
    func startFullText(_ txn: WriteTransaction, _ collection: CollectionSpec, _ definition: IndexDefinition) throws {
        let store = fullTextStore(definition)
        try store.deleteAll(txn)
        let last = StoreLayout.decodeUInt64(try txn.get(tables.counters, key: StoreLayout.sequenceCounterKey(collection.number)))
        try store.write(FullTextStore.Statistics(buildLimit: last), txn)
    }

    /// Postings of documents read for a build, not yet written.
    struct FullTextBatch {
        var terms = FullTextCollector()
        var documents: [(sequence: UInt64, length: UInt32)] = []
        /// The sequence of the last entry read (the next batch reads after it), and whether the
        /// build limit was reached.
        var last: UInt64 = 0
        var isLast = false
        var bytes = 0
    }

    /// The most posting bytes one build batch holds in memory before they are written.
    static let fullTextBatchBytes = 32 << 20

    /// Reads documents in sequence order after sequence `after`, up to the build limit
    /// or ``fullTextBatchBytes`` of postings, and tokenizes them: the slow part of a build, done in
    /// a read snapshot so writers go on meanwhile.
    func collectFullText(
        _ txn: ReadTransaction, _ collection: CollectionSpec, _ index: CompiledIndex,
        after: UInt64
    ) throws -> FullTextBatch {
        let statistics = try fullTextStore(index.definition).statistics(txn)
        let tokenizer = try index.makeTokenizer()
        var batch = FullTextBatch()
        batch.isLast = true
        batch.last = after
        try SequenceIndex(tables: tables).forEachEntry(txn, collection.number, after: after, through: statistics.buildLimit) {
            sequence, id, isDeleted in
            if batch.bytes >= Self.fullTextBatchBytes {
                batch.isLast = false
                return false
            }
            batch.last = sequence
            guard !isDeleted else { return true }
            let id = String(decoding: id, as: UTF8.self)
            guard let stored = try txn.get(tables.documents, key: StoreLayout.documentKey(collection.number, id)) else { return true }
            let record = try DocumentRecord(decoding: stored)
            guard record.sequence == sequence, let values = try index.expressionValues(id: id, record: record),
                let length = batch.terms.add(sequence, values.map { $0?.string }, tokenizer)
            else { return true }
            batch.bytes = batch.terms.bytes
            batch.documents.append((sequence, length))
            return true
        }
        return batch
    }

    /// Writes a collected batch. Documents changed since they were read have already indexed
    /// their new state (and found nothing of the old to remove), so their old postings are left
    /// out here.
    func applyFullText(
        _ txn: WriteTransaction, _ collection: CollectionSpec, _ index: CompiledIndex,
        _ batch: FullTextBatch
    ) throws {
        let store = fullTextStore(index.definition)
        var statistics = try store.statistics(txn)
        var stale: Set<UInt64> = []
        let sequences = SequenceIndex(tables: tables)
        for document in batch.documents {
            if try sequences.withEntry(txn, collection.number, document.sequence, { _, isDeleted in !isDeleted }) == true {
                statistics.documents += 1
                statistics.totalLength += UInt64(document.length)
            } else {
                stale.insert(document.sequence)
            }
        }
        for (term, builder) in batch.terms.sorted() {
            var builder = builder
            if !stale.isEmpty {
                let list = try builder.decoded()
                builder = BlockBuilder()
                for position in 0..<list.count where !stale.contains(list.documents[position]) {
                    builder.append(
                        document: list.documents[position], length: list.lengths[position],
                        positions: list.positions[list.positionRange(position)])
                }
                if builder.isEmpty { continue }
            }
            try store.add(txn, term: term, builder)
        }
        try store.write(statistics, txn)
    }
}

/// The postings of many documents, gathered for a build with as little work per word as
/// possible: each term gets a number once, and a document's words are grouped by sorting
/// (term number, position) pairs instead of filling a dictionary per document.
struct FullTextCollector {
    private var numbers: [String: Int] = [:]
    private var terms: [String] = []
    private var builders: [BlockBuilder] = []
    private var pairs: [UInt64] = []
    /// About how many bytes the postings take.
    private(set) var bytes = 0

    /// Adds a document's fields; returns its length in terms, or nil when it has none.
    mutating func add(_ document: UInt64, _ fields: [String?], _ tokenizer: FullTextTokenizer) -> UInt32? {
        pairs.removeAll(keepingCapacity: true)
        for (field, text) in fields.enumerated() {
            guard let text, field < 256 else { continue }
            let base = UInt32(field) << PostingList.fieldShift
            tokenizer.forEachTerm(in: text) { term, offset in
                guard offset <= PostingList.maximumOffset else { return }
                let number: Int
                if let known = numbers[term] {
                    number = known
                } else {
                    number = terms.count
                    numbers[term] = number
                    terms.append(term)
                    builders.append(BlockBuilder())
                }
                pairs.append(UInt64(number) << 32 | UInt64(base | UInt32(offset)))
            }
        }
        guard !pairs.isEmpty else { return nil }
        pairs.sort()
        let length = UInt32(clamping: pairs.count)
        var start = 0
        while start < pairs.count {
            let number = Int(pairs[start] >> 32)
            var end = start + 1
            while end < pairs.count && Int(pairs[end] >> 32) == number { end += 1 }
            builders[number].append(
                document: document, length: length,
                positions: pairs[start..<end].lazy.map { UInt32(truncatingIfNeeded: $0) })
            bytes += end - start + 4
            start = end
        }
        return length
    }

    /// The terms with their postings, in term (key) order.
    func sorted() -> [(term: String, builder: BlockBuilder)] {
        terms.indices.sorted { terms[$0].utf8.lexicographicallyPrecedes(terms[$1].utf8) }.map { (terms[$0], builders[$0]) }
    }
}

/// The terms of one document in a full-text index: each with its positions, in order.
struct DocumentTerms: Equatable {
    var terms: [String: [UInt32]] = [:]
    /// The number of terms (stop words excluded), for ranking.
    var length: UInt32 = 0
}

extension CompiledIndex {
    func makeTokenizer() throws -> FullTextTokenizer {
        try FullTextTokenizer(ignoreAccents: definition.ignoreAccents ?? false, algorithm: fullTextAlgorithm)
    }

    /// The terms of a stored document: nil when it is deleted, fails the partial condition or
    /// has no term. Each expression is a field; only string values are indexed.
    func fullTextTerms(id: String, record: DocumentRecord, tokenizer: FullTextTokenizer) throws -> DocumentTerms? {
        guard let values = try expressionValues(id: id, record: record) else { return nil }
        return Self.fullTextTerms(values.map { $0?.string }, tokenizer: tokenizer)
    }

    static func fullTextTerms(_ fields: [String?], tokenizer: FullTextTokenizer) -> DocumentTerms? {
        var document = DocumentTerms()
        for (field, text) in fields.enumerated() {
            guard let text, field < 256 else { continue }
            let base = UInt32(field) << PostingList.fieldShift
            tokenizer.forEachTerm(in: text) { term, offset in
                guard offset <= PostingList.maximumOffset else { return }
                document.terms[term, default: []].append(base | UInt32(offset))
                document.length += 1
            }
        }
        return document.terms.isEmpty ? nil : document
    }
}
