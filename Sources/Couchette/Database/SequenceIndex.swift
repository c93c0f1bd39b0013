/// The sequence index of every collection — for each current record its sequence, document id
/// and deleted flag, in sequence order — read and written here alone.
///
/// A collection's entries live in two places: the `sequences` table, and after them its newest
/// few in its ``SequenceTail``, a value in LMDB's main database beside the collection's counters.
/// Every commit rewrites the main database's page (the tables' records and the counters live
/// there), so an entry added to the tail costs no page of its own, where an entry appended to
/// the table dirtied the table's last leaf and the branch above it: two of the six pages a lone
/// save wrote (issue #21). When the tail would outgrow its bounds, its entries and the new one
/// move to the table in one go, appended in order at its end, and the tail starts empty again:
/// the table's pages are written once for a few dozen saves. A commit that moved a tail (a
/// batch, say) appends its further entries of that collection to the table directly: its pages
/// are dirty already, and each document would otherwise rewrite the tail.
///
/// Invariant: every sequence in a collection's tail is greater than every sequence of that
/// collection in the table, so the table up to the tail's first sequence, then the tail, is the
/// whole index in order. An entry to remove is in the tail when the tail holds its sequence,
/// else in the table.
///
/// ```swift
/// let index = SequenceIndex(tables: tables)
/// try index.forEachEntry(txn, collection.number, after: 0, through: .max) { sequence, id, isDeleted in
///     print(sequence, String(decoding: id, as: UTF8.self), isDeleted)
///     return true
/// }
/// ```
struct SequenceIndex: Sendable {
    let tables: StorageEnvironment.Tables

    // MARK: - Reading

    /// The tail of collection `collection` in `txn`, read in place (empty when none is stored).
    func tail(_ txn: ReadTransaction, _ collection: UInt32) throws -> SequenceTail {
        let stored = try StoreLayout.withCounterKey(StoreLayout.sequenceTailPrefix, collection) { try txn.get(tables.counters, key: $0) }
        return stored.map(SequenceTail.init(bytes:)) ?? .empty
    }

    /// Calls `body` with the sequence, document id (its UTF-8 bytes, valid inside `body`) and
    /// deleted flag of every entry of `collection` after `sequence` up to `last`, in sequence
    /// order, until it returns false. `body` must not write in `txn`.
    ///
    /// The tail is read first: a range that starts in it (a change feed following the newest
    /// commits) does not search the table at all.
    func forEachEntry(
        _ txn: ReadTransaction, _ collection: UInt32, after sequence: UInt64, through last: UInt64,
        _ body: (UInt64, UnsafeRawBufferPointer, Bool) throws -> Bool
    ) throws {
        guard sequence < last else { return }
        let tail = try self.tail(txn, collection)
        let tableLast = tail.firstSequence.map { min(last, max($0, 1) - 1) } ?? last
        var going = true
        if sequence < tableLast {
            let start = StoreLayout.sequenceKey(collection, sequence + 1)
            let end =
                tableLast == .max
                ? KeyEncoding.successor(ofPrefix: StoreLayout.collectionPrefix(collection))
                : StoreLayout.sequenceKey(collection, tableLast + 1)
            try txn.scan(tables.sequences, from: start, to: end) { key, value in
                guard key.count == 12, value.count >= 1 else { return true }
                going = try body(KeyEncoding.readUInt64(key, at: 4), UnsafeRawBufferPointer(rebasing: value[1...]), value[0] & 1 != 0)
                return going
            }
        }
        guard going else { return }
        try tail.forEach { entry in
            guard entry.sequence <= last else { return false }
            guard entry.sequence > sequence else { return true }
            return try body(entry.sequence, entry.id, entry.isDeleted)
        }
    }

    /// Calls `body` with the document id (UTF-8 bytes, valid inside `body`) and deleted flag of
    /// the entry of `sequence` in `collection`; nil when there is none.
    ///
    /// The table is asked first: readers look up the sequences of documents found elsewhere (a
    /// full-text posting, a record), and most of those are older than the tail.
    func withEntry<R>(
        _ txn: ReadTransaction, _ collection: UInt32, _ sequence: UInt64, _ body: (UnsafeRawBufferPointer, Bool) throws -> R
    ) throws -> R? {
        let stored = try StoreLayout.withSequenceKey(collection, sequence) { try txn.get(tables.sequences, key: $0) }
        if let stored {
            guard stored.count >= 1 else { return nil }
            return try body(UnsafeRawBufferPointer(rebasing: stored[1...]), stored[0] & 1 != 0)
        }
        guard let entry = try tail(txn, collection).entry(sequence) else { return nil }
        return try body(entry.id, entry.isDeleted)
    }

    /// The number of entries of `collection`, and of those of tombstones. Checks the tail on the
    /// way: a malformed tail, or one that does not follow the table, throws `.corruption`.
    func census(_ txn: ReadTransaction, _ collection: UInt32) throws -> (entries: Int, deleted: UInt64) {
        var entries = 0
        var deleted: UInt64 = 0
        var tableLast: UInt64 = 0
        try txn.scan(tables.sequences, prefix: StoreLayout.collectionPrefix(collection)) { key, value in
            entries += 1
            if value.first == 1 { deleted += 1 }
            if key.count == 12 { tableLast = KeyEncoding.readUInt64(key, at: 4) }
            return true
        }
        let tail = try self.tail(txn, collection)
        if let first = tail.firstSequence, first <= tableLast {
            throw CouchetteError(.corruption, "sequence tail starts at \(first), not after the table's last sequence \(tableLast)")
        }
        try tail.forEach { entry in
            entries += 1
            if entry.isDeleted { deleted += 1 }
            return true
        }
        return (entries, deleted)
    }

    // MARK: - Writing

    /// Takes the entry of sequence `old` (nil: none) out of `collection`'s index and adds the
    /// entry of sequence `new` (nil: none, a purge) for document `id` (UTF-8 bytes, at most
    /// ``StoreLayout/maximumDocumentIDLength``) with its deleted flag: one rewrite of the tail
    /// for both when they are in it.
    ///
    /// The tail is read and rewritten through the kept cursor of the main database, which the
    /// commit's counters use too, with the new value built on the stack: no allocation. A commit
    /// that moved the collection's tail to the table (``WriteContext/bypassesSequenceTail(_:)``)
    /// writes the table alone.
    func replace(
        _ context: WriteContext, _ collection: UInt32, removing old: UInt64?, adding new: UInt64?, isDeleted: Bool,
        id: UnsafeRawBufferPointer
    ) throws {
        let txn = context.txn
        if context.bypassesSequenceTail(collection) {
            if let old { try removeFromTable(txn, collection, old) }
            if let new { try appendToTable(txn, collection, new, isDeleted: isDeleted, id: id) }
            return
        }
        try withStoredTail(txn, collection) { key, buffer, storedLength in
            let stored = SequenceTail(bytes: UnsafeRawBufferPointer(rebasing: buffer[..<(storedLength ?? 0)]))
            // `length`: the bytes of the entries, without the padding.
            var (length, count, last, removed) = try stored.layout(finding: old)
            if let removed {
                let base = buffer.baseAddress!
                (base + removed.lowerBound).copyMemory(from: base + removed.upperBound, byteCount: length - removed.upperBound)
                length -= removed.count
                count -= 1
            } else if let old {
                try removeFromTable(txn, collection, old)
            }
            guard let new else {
                if removed != nil { try store(txn, key, buffer, length) }
                return
            }
            let size = SequenceTail.entryHeaderSize + id.count
            if id.count <= SequenceTail.maximumIDLength && length + size <= SequenceTail.maximumBytes
                && count < SequenceTail.maximumEntries && new > last
            {
                SequenceTail.write(
                    sequence: new, isDeleted: isDeleted, id: id, into: UnsafeMutableRawBufferPointer(rebasing: buffer[length...]))
                length += size
                try store(txn, key, buffer, length)
                return
            }
            // Full (or an id too long for it): the tail and the new entry move to the table.
            try moveToTable(txn, collection, UnsafeRawBufferPointer(rebasing: buffer[..<length]))
            try appendToTable(txn, collection, new, isDeleted: isDeleted, id: id)
            if storedLength != nil { try store(txn, key, buffer, 0) }
            context.bypassSequenceTail(collection)
        }
    }

    /// Moves `collection`'s tail to the table and has `context` append the collection's further
    /// entries there: for a write that adds many (a bulk insert), which would otherwise rewrite
    /// the tail for each of its first few dozen documents.
    func bypassTail(_ context: WriteContext, _ collection: UInt32) throws {
        guard !context.bypassesSequenceTail(collection) else { return }
        let txn = context.txn
        try withStoredTail(txn, collection) { key, buffer, storedLength in
            guard let storedLength, storedLength > 0 else { return }
            try moveToTable(txn, collection, UnsafeRawBufferPointer(rebasing: buffer[..<storedLength]))
            try store(txn, key, buffer, 0)
        }
        context.bypassSequenceTail(collection)
    }

    /// Calls `body` with the key of `collection`'s tail and a copy of the stored tail at the start
    /// of a buffer on the stack of ``SequenceTail/maximumBytes`` (its length, nil when no tail is
    /// stored). A copy: the writes that follow may move the stored bytes. Read through the kept
    /// cursor of the main database, which the commit's counters use too.
    private func withStoredTail(
        _ txn: WriteTransaction, _ collection: UInt32,
        _ body: (UnsafeRawBufferPointer, UnsafeMutableRawBufferPointer, Int?) throws -> Void
    ) throws {
        try StoreLayout.withCounterKey(StoreLayout.sequenceTailPrefix, collection) { key in
            try withUnsafeTemporaryAllocation(byteCount: SequenceTail.maximumBytes, alignment: 1) { buffer in
                let stored = try txn.getNear(tables.counters, key: key)
                if let stored {
                    guard stored.count <= SequenceTail.maximumBytes else {
                        throw CouchetteError(.corruption, "sequence tail of \(stored.count) bytes (at most \(SequenceTail.maximumBytes))")
                    }
                    if let source = stored.baseAddress { buffer.baseAddress!.copyMemory(from: source, byteCount: stored.count) }
                }
                try body(key, buffer, stored?.count)
            }
        }
    }

    /// Appends every entry of `tail` (bytes of a ``SequenceTail``) to the table, in order.
    private func moveToTable(_ txn: WriteTransaction, _ collection: UInt32, _ tail: UnsafeRawBufferPointer) throws {
        try SequenceTail(bytes: tail).forEach { entry in
            try appendToTable(txn, collection, entry.sequence, isDeleted: entry.isDeleted, id: entry.id)
            return true
        }
    }

    /// Removes every entry of `collection`, its tail included.
    func removeAll(_ txn: WriteTransaction, _ collection: UInt32) throws {
        try txn.deleteAll(tables.sequences, prefix: StoreLayout.collectionPrefix(collection))
        try txn.delete(tables.counters, key: StoreLayout.sequenceTailKey(collection))
    }

    /// Writes the first `used` bytes of `buffer` (entries of a ``SequenceTail``), padded with
    /// zeros to their stored size, as the tail stored under `key`, through the kept cursor that
    /// read it: in place when the size is unchanged.
    private func store(_ txn: WriteTransaction, _ key: UnsafeRawBufferPointer, _ buffer: UnsafeMutableRawBufferPointer, _ used: Int) throws
    {
        let size = SequenceTail.storedSize(of: used)
        if size > used { (buffer.baseAddress! + used).initializeMemory(as: UInt8.self, repeating: 0, count: size - used) }
        try txn.replaceNear(tables.counters, key: key, count: size) { target in
            if size > 0 { target.baseAddress!.copyMemory(from: buffer.baseAddress!, byteCount: size) }
        }
    }

    /// Appends an entry to the `sequences` table, through its kept appending cursor: a new
    /// sequence is the table's last key (any other key gets an ordinary put there).
    private func appendToTable(
        _ txn: WriteTransaction, _ collection: UInt32, _ sequence: UInt64, isDeleted: Bool, id: UnsafeRawBufferPointer
    ) throws {
        try StoreLayout.withSequenceKey(collection, sequence) { key in
            try txn.appendNear(tables.sequences, key: key, count: 1 + id.count) { entry in
                entry[0] = isDeleted ? 1 : 0
                if let base = id.baseAddress { (entry.baseAddress! + 1).copyMemory(from: base, byteCount: id.count) }
            }
        }
    }

    /// Removes an entry from the `sequences` table, through its kept cursor: a batch's documents,
    /// written in the order they were saved, have their old entries near one another.
    private func removeFromTable(_ txn: WriteTransaction, _ collection: UInt32, _ sequence: UInt64) throws {
        _ = try StoreLayout.withSequenceKey(collection, sequence) { try txn.deleteNear(tables.sequences, key: $0) }
    }
}
