/// Document-level reads and writes inside one LMDB transaction: records, revision trees, the
/// sequence index, live counts and expirations, always updated together.
///
/// It knows nothing of actors or queues; ``Database`` decides which transaction to run it in.
struct DocumentStore: Sendable {
    let tables: StorageEnvironment.Tables
    /// Kept current in the same transaction as every write of a current record.
    let indexes: any DocumentIndexing

    // MARK: - Reading

    func record(_ txn: ReadTransaction, _ collection: CollectionSpec, _ id: String) throws -> DocumentRecord? {
        try txn.get(tables.documents, key: StoreLayout.documentKey(collection.number, id)).map(DocumentRecord.init(decoding:))
    }

    /// The live, unexpired document, or nil.
    func document(_ txn: ReadTransaction, _ collection: CollectionSpec, _ id: String, now: UInt64) throws -> Document? {
        guard let record = try record(txn, collection, id), !record.isDeleted, !record.isExpired(now: now) else { return nil }
        return Document(id: id, revisionID: record.revisionID, sequence: record.sequence, body: record.body)
    }

    func revisionTree(_ txn: ReadTransaction, _ collection: CollectionSpec, _ id: String) throws -> RevisionTree {
        try txn.get(tables.revisions, key: StoreLayout.documentKey(collection.number, id)).map(RevisionTree.init(decoding:)) ?? RevisionTree()
    }

    func liveCount(_ txn: ReadTransaction, _ collection: CollectionSpec) throws -> UInt64 {
        StoreLayout.decodeUInt64(try txn.get(tables.meta, key: StoreLayout.countKey(collection.number)))
    }

    func lastSequence(_ txn: ReadTransaction, _ collection: CollectionSpec) throws -> UInt64 {
        StoreLayout.decodeUInt64(try txn.get(tables.meta, key: StoreLayout.sequenceCounterKey(collection.number)))
    }

    /// The earliest stored expiration, in milliseconds since 1970.
    func nextExpiration(_ txn: ReadTransaction) throws -> UInt64? {
        var next: UInt64?
        try txn.scan(tables.expirations, from: [], to: nil) { key, _ in
            if key.count >= 8 { next = KeyEncoding.readUInt64(key, at: 0) }
            return false
        }
        return next
    }

    // MARK: - Writing

    /// Applies one operation. Throws for errors (`.notFound`, `.notOpen`, …); returns `.conflict`
    /// when concurrency control refuses. Every changed document is recorded in the context.
    func apply(_ operation: WriteOperation, in context: WriteContext) throws -> WriteOutcome {
        func checkExists(_ collection: CollectionSpec) throws {
            guard context.collections[collection.number] == collection else {
                throw CouchetteError(.notOpen, "collection \(collection.fullName) has been deleted")
            }
        }
        let txn = context.txn
        switch operation {
        case .save(let collection, let id, let body, let base, let control):
            try checkExists(collection)
            return try writeRevision(context, collection, id, body: body, deleting: false, base: base, control: control)
        case .delete(let collection, let id, let base, let control):
            try checkExists(collection)
            return try writeRevision(context, collection, id, body: Document.emptyBody, deleting: true, base: base, control: control)
        case .purge(let collection, let id):
            try checkExists(collection)
            guard let record = try record(txn, collection, id) else {
                throw CouchetteError(.notFound, "document '\(id)' not found in \(collection.fullName)")
            }
            try purge(context, collection, id, record)
            context.recordChange(collection, id)
            return .done
        case .setExpiration(let collection, let id, let milliseconds):
            try checkExists(collection)
            guard var record = try record(txn, collection, id), !record.isDeleted, !record.isExpired(now: context.now) else {
                throw CouchetteError(.notFound, "document '\(id)' not found in \(collection.fullName)")
            }
            if record.expiration != 0 {
                try txn.delete(tables.expirations, key: StoreLayout.expirationKey(record.expiration, collection.number, id))
            }
            record.expiration = milliseconds  // the body is unchanged: no index entry changes
            if milliseconds != 0 {
                try txn.put(tables.expirations, key: StoreLayout.expirationKey(milliseconds, collection.number, id), value: [])
            }
            try txn.put(tables.documents, key: StoreLayout.documentKey(collection.number, id), value: record.encoded())
            return .done
        case .purgeExpired(let now):
            try purgeExpired(context, now: now)
            return .done
        }
    }

    private func writeRevision(_ context: WriteContext, _ collection: CollectionSpec, _ id: String,
                               body: [UInt8], deleting: Bool, base: String?, control: ConcurrencyControl) throws -> WriteOutcome {
        guard !id.isEmpty, id.utf8.count <= 480 else {
            throw CouchetteError(.invalidParameter, "document id '\(id)' must be 1 to 480 bytes long")
        }
        let txn = context.txn
        let key = StoreLayout.documentKey(collection.number, id)
        var existing = try txn.get(tables.documents, key: key).map(DocumentRecord.init(decoding:))
        if let expired = existing, expired.isExpired(now: context.now) {
            // An expired document no longer exists: clear it before writing afresh.
            try purge(context, collection, id, expired)
            existing = nil
        }
        if control == .failOnConflict, let existing {
            // A new document (no base) may replace a tombstone; anything else must match exactly.
            let matches = base == existing.revisionID || (base == nil && existing.isDeleted && !deleting)
            if !matches { return .conflict }
        }
        if deleting {
            guard let existing else {
                throw CouchetteError(.notFound, "document '\(id)' not found in \(collection.fullName)")
            }
            if existing.isDeleted { return .saved(revisionID: existing.revisionID, sequence: existing.sequence) }
        }

        let revisionID = RevisionID.make(parent: existing?.revisionID, deleted: deleting, body: body)
        let sequence = try context.nextSequence(collection)
        var tree = existing == nil ? RevisionTree() : try revisionTree(txn, collection, id)
        tree.add(revisionID, parent: existing?.revisionID, isDeleted: deleting, sequence: sequence)

        var expiration = existing?.expiration ?? 0
        if let existing {
            try txn.delete(tables.sequences, key: StoreLayout.sequenceKey(collection.number, existing.sequence))
            if deleting && existing.expiration != 0 {
                try txn.delete(tables.expirations, key: StoreLayout.expirationKey(existing.expiration, collection.number, id))
                expiration = 0
            }
        }
        var sequenceEntry: [UInt8] = [deleting ? 1 : 0]
        sequenceEntry.append(contentsOf: id.utf8)
        try txn.put(tables.sequences, key: StoreLayout.sequenceKey(collection.number, sequence), value: sequenceEntry)
        try txn.put(tables.revisions, key: key, value: tree.encoded())
        let record = DocumentRecord(isDeleted: deleting, sequence: sequence, expiration: expiration,
                                    revisionID: revisionID, body: deleting ? [] : body)
        try txn.put(tables.documents, key: key, value: record.encoded())
        try indexes.update(txn, collection, id, old: existing, new: record)

        let wasLive = existing.map { !$0.isDeleted } ?? false
        if wasLive != !deleting { context.adjustCount(collection, by: deleting ? -1 : 1) }
        context.recordChange(collection, id)
        return .saved(revisionID: revisionID, sequence: sequence)
    }

    /// Removes every trace of a document.
    private func purge(_ context: WriteContext, _ collection: CollectionSpec, _ id: String, _ record: DocumentRecord) throws {
        let txn = context.txn
        let key = StoreLayout.documentKey(collection.number, id)
        try txn.delete(tables.documents, key: key)
        try indexes.update(txn, collection, id, old: record, new: nil)
        try txn.delete(tables.revisions, key: key)
        try txn.delete(tables.sequences, key: StoreLayout.sequenceKey(collection.number, record.sequence))
        if record.expiration != 0 {
            try txn.delete(tables.expirations, key: StoreLayout.expirationKey(record.expiration, collection.number, id))
        }
        if !record.isDeleted { context.adjustCount(collection, by: -1) }
    }

    private func purgeExpired(_ context: WriteContext, now: UInt64) throws {
        var due: [(UInt32, String)] = []
        try context.txn.scan(tables.expirations, from: [], to: StoreLayout.encodeUInt64(now + 1)) { key, _ in
            guard key.count >= 12 else { return true }
            due.append((KeyEncoding.readUInt32(key, at: 8), String(decoding: key[12...], as: UTF8.self)))
            return true
        }
        for (number, id) in due {
            guard let collection = context.collections[number] else { continue }
            guard let record = try record(context.txn, collection, id), record.isExpired(now: now) else { continue }
            try purge(context, collection, id, record)
            context.recordChange(collection, id)
        }
    }

    // MARK: - Collections

    /// Removes every document, revision, sequence, expiration and index of a collection, and its counters.
    func dropCollection(_ txn: WriteTransaction, _ collection: CollectionSpec) throws {
        try indexes.dropCollection(txn, collection)
        let prefix = StoreLayout.collectionPrefix(collection.number)
        var expirations: [[UInt8]] = []
        try txn.scan(tables.documents, prefix: prefix) { key, value in
            let record = try DocumentRecord(decoding: value)
            if record.expiration != 0 {
                expirations.append(StoreLayout.expirationKey(record.expiration, collection.number,
                                                              String(decoding: key[4...], as: UTF8.self)))
            }
            return true
        }
        for key in expirations { try txn.delete(tables.expirations, key: key) }
        try txn.deleteAll(tables.documents, prefix: prefix)
        try txn.deleteAll(tables.revisions, prefix: prefix)
        try txn.deleteAll(tables.sequences, prefix: prefix)
        try txn.delete(tables.meta, key: StoreLayout.countKey(collection.number))
        try txn.delete(tables.meta, key: StoreLayout.sequenceCounterKey(collection.number))
        try txn.delete(tables.meta, key: StoreLayout.collectionKey(scope: collection.scope, name: collection.name))
    }
}
