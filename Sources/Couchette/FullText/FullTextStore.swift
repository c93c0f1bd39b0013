/// The inverted index of one full-text index in the `full-text` table.
///
/// | key                                              | value                                     |
/// |--------------------------------------------------|-------------------------------------------|
/// | index number (u32), `00`                          | ``Statistics``: varints                   |
/// | index number (u32), term (UTF-8), `00`, first document (u64) | a ``PostingBlock``            |
///
/// Documents are numbered by their sequence, so a document saved later sorts last and its
/// postings are appended to each term's last block; a term's blocks, in key order, hold its
/// documents in order. Terms never contain `00` (the tokenizer drops control characters).
struct FullTextStore {
    let table: Table
    let prefix: [UInt8]

    init(table: Table, index: UInt32) {
        self.table = table
        prefix = StoreLayout.encodeUInt32(index)
    }

    /// What ranking needs about the whole index, and how far the initial build goes.
    struct Statistics: Equatable {
        /// Indexed documents (with at least one term) and their total length in terms.
        var documents: UInt64 = 0
        var totalLength: UInt64 = 0
        /// The last sequence of the collection when the index was defined: the build indexes
        /// the documents up to it; later writes index their documents themselves.
        var buildLimit: UInt64 = 0

        var averageLength: Double { documents == 0 ? 0 : Double(totalLength) / Double(documents) }
    }

    private var statisticsKey: [UInt8] { prefix + [0] }

    func statistics(_ txn: ReadTransaction) throws -> Statistics {
        guard let bytes = try txn.get(table, key: statisticsKey) else { return Statistics() }
        var offset = 0
        return Statistics(
            documents: try Varint.read(bytes, &offset), totalLength: try Varint.read(bytes, &offset),
            buildLimit: try Varint.read(bytes, &offset))
    }

    func write(_ statistics: Statistics, _ txn: WriteTransaction) throws {
        var bytes: [UInt8] = []
        Varint.append(statistics.documents, to: &bytes)
        Varint.append(statistics.totalLength, to: &bytes)
        Varint.append(statistics.buildLimit, to: &bytes)
        try txn.put(table, key: statisticsKey, value: bytes)
    }

    /// Removes everything this index stored.
    func deleteAll(_ txn: WriteTransaction) throws {
        try txn.deleteAll(table, prefix: prefix)
    }

    private func termPrefix(_ term: String) -> [UInt8] {
        var key = prefix
        key.append(contentsOf: term.utf8)
        key.append(0)
        return key
    }

    private func blockKey(_ termPrefix: [UInt8], _ first: UInt64) -> [UInt8] {
        var key = termPrefix
        KeyEncoding.appendUInt64(first, to: &key)
        return key
    }

    private static func first(ofBlockKey key: UnsafeRawBufferPointer) throws -> UInt64 {
        guard key.count >= 9 else { throw CouchetteError(.corruption, "a full-text block key is too short") }
        return KeyEncoding.readUInt64(key, at: key.count - 8)
    }

    // MARK: - Reading

    /// Every posting of `term`.
    func postings(_ txn: ReadTransaction, term: String) throws -> PostingList {
        var list = PostingList()
        try txn.scan(table, prefix: termPrefix(term)) { key, value in
            try PostingBlock.decode(value, first: try Self.first(ofBlockKey: key), into: &list)
            return true
        }
        return list
    }

    /// The postings of every term starting with `start` (not empty), merged; `limit` bounds the
    /// number of distinct terms expanded.
    func postings(_ txn: ReadTransaction, prefix start: String, limit: Int) throws -> PostingList {
        var lists: [PostingList] = []
        var current = PostingList()
        var currentTerm: [UInt8] = []
        var terms = 0
        try txn.scan(table, prefix: prefix + Array(start.utf8)) { key, value in
            guard key.count >= prefix.count + 10 else { return true }
            let term = Array(key[prefix.count..<key.count - 9])
            if term != currentTerm {
                if !current.isEmpty { lists.append(current) }
                current = PostingList()
                currentTerm = term
                terms += 1
                if terms > limit {
                    throw CouchetteError(
                        .invalidQuery, "the full-text prefix '\(start)*' matches more than \(limit) terms; use a longer prefix")
                }
            }
            try PostingBlock.decode(value, first: try Self.first(ofBlockKey: key), into: &current)
            return true
        }
        if !current.isEmpty { lists.append(current) }
        return PostingList.union(lists)
    }

    // MARK: - Writing

    /// The last block of `term` whose first document is at most `document` (or the term's
    /// first block when every block starts after it): its key and postings.
    private func block(_ txn: ReadTransaction, _ termPrefix: [UInt8], at document: UInt64) throws -> (key: [UInt8], list: PostingList)? {
        var found: (key: [UInt8], list: PostingList)?
        let upper = document == .max ? KeyEncoding.successor(ofPrefix: termPrefix) : blockKey(termPrefix, document + 1)
        try txn.scanBackward(table, from: termPrefix, to: upper) { key, value in
            var list = PostingList()
            try PostingBlock.decode(value, first: try Self.first(ofBlockKey: key), into: &list)
            found = (Array(key), list)
            return false
        }
        if found != nil { return found }
        try txn.scan(table, prefix: termPrefix) { key, value in
            var list = PostingList()
            try PostingBlock.decode(value, first: try Self.first(ofBlockKey: key), into: &list)
            found = (Array(key), list)
            return false
        }
        return found
    }

    /// Replaces the block at `key` (nil: none) by `list` cut into blocks.
    private func rewrite(_ txn: WriteTransaction, _ termPrefix: [UInt8], replacing key: [UInt8]?, with list: PostingList) throws {
        if let key { try txn.delete(table, key: key) }
        for block in PostingBlock.blocks(list) {
            try txn.put(table, key: blockKey(termPrefix, block.first), value: block.bytes)
        }
    }

    /// Adds (or replaces) the postings of one document: `terms` maps each term to its positions.
    func add(_ txn: WriteTransaction, document: UInt64, length: UInt32, terms: [String: [UInt32]]) throws {
        for (term, positions) in terms {
            let termPrefix = termPrefix(term)
            // The common case: a newly saved document has the highest number, so its posting
            // goes at the end of the term's last block (or starts a new block), nothing decoded.
            var last: (key: [UInt8], first: UInt64, bytes: [UInt8])?
            try txn.scanBackward(table, from: termPrefix, to: KeyEncoding.successor(ofPrefix: termPrefix)) { key, value in
                last = (Array(key), try Self.first(ofBlockKey: key), Array(value))
                return false
            }
            guard let last else {
                var builder = BlockBuilder()
                builder.append(document: document, length: length, positions: positions)
                try write(txn, termPrefix, builder.blocks)
                continue
            }
            var (key, bytes) = (last.key, last.bytes)
            let previous = try bytes.withUnsafeBytes { try PostingBlock.lastDocument($0, first: last.first) }
            guard document > previous else {
                var single = PostingList()
                single.append(document: document, length: length, positions: positions)
                try merge(txn, term: term, single)
                continue
            }
            var posting: [UInt8] = []
            PostingBlock.encode(document: document, length: length, positions: positions, after: previous, to: &posting)
            if bytes.count + posting.count <= PostingBlock.maximumSize {
                bytes.append(contentsOf: posting)
            } else {
                posting.removeAll()
                PostingBlock.encode(document: document, length: length, positions: positions, after: document, to: &posting)
                (key, bytes) = (blockKey(termPrefix, document), posting)
            }
            try txn.put(table, key: key, value: bytes)
        }
    }

    private func write(_ txn: WriteTransaction, _ termPrefix: [UInt8], _ blocks: [(first: UInt64, bytes: [UInt8])]) throws {
        for block in blocks { try txn.put(table, key: blockKey(termPrefix, block.first), value: block.bytes) }
    }

    /// Adds a batch of a term's postings (documents in order, none stored yet): written as they
    /// are when the term has no block yet (a first build, in term order, appends to the table),
    /// merged into its blocks otherwise.
    func add(_ txn: WriteTransaction, term: String, _ builder: BlockBuilder) throws {
        let termPrefix = termPrefix(term)
        var exists = false
        try txn.scan(table, prefix: termPrefix) { _, _ in
            exists = true
            return false
        }
        if exists {
            try merge(txn, term: term, try builder.decoded())
        } else {
            try write(txn, termPrefix, builder.blocks)
        }
    }

    /// Merges `list` (documents in order) into the postings of `term`; a document already there
    /// is replaced.
    func merge(_ txn: WriteTransaction, term: String, _ list: PostingList) throws {
        let termPrefix = termPrefix(term)
        for index in 0..<list.count {
            let document = list.documents[index]
            guard let target = try block(txn, termPrefix, at: document) else {
                var single = PostingList()
                single.append(list, index)
                try rewrite(txn, termPrefix, replacing: nil, with: single)
                continue
            }
            var merged = PostingList()
            var inserted = false
            for old in 0..<target.list.count {
                let oldDocument = target.list.documents[old]
                if !inserted && document <= oldDocument {
                    merged.append(list, index)
                    inserted = true
                    if document == oldDocument { continue }
                }
                merged.append(target.list, old)
            }
            if !inserted { merged.append(list, index) }
            try rewrite(txn, termPrefix, replacing: target.key, with: merged)
        }
    }

    /// Removes a document's postings for `terms`; returns whether any were there.
    @discardableResult
    func remove(_ txn: WriteTransaction, document: UInt64, terms: some Sequence<String>) throws -> Bool {
        var removedAny = false
        for term in terms {
            let termPrefix = termPrefix(term)
            guard let target = try block(txn, termPrefix, at: document),
                let position = target.list.documents.firstIndex(of: document)
            else { continue }
            var kept = PostingList()
            for index in 0..<target.list.count where index != position { kept.append(target.list, index) }
            try rewrite(txn, termPrefix, replacing: target.key, with: kept)
            removedAny = true
        }
        return removedAny
    }
}
