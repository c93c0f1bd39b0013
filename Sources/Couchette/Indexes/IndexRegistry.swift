/// Index definitions and entries: reads them for the planner, keeps them current on every write
/// (``DocumentIndexing``), creates, builds, rebuilds and drops them.
///
/// Definitions are read from the transaction at hand (so an index another process created is
/// maintained too); their compiled form is cached by the stored bytes.
final class IndexRegistry: DocumentIndexing {
    let tables: StorageEnvironment.Tables
    private let compiled = Locked<[[UInt8]: CompiledIndex]>([:])
    /// Keyed by collection number (hashing a number, not the spec's names, per query execution);
    /// the spec is kept to check it is the same collection.
    private let snapshots = Locked<[UInt32: SnapshotIndexes]>([:])

    /// One snapshot's answer for one collection. A class: a look-up copies one reference out of
    /// the lock, where a tuple of these fields was copied field by field through the runtime's
    /// generic tuple copy at every query execution.
    private final class SnapshotIndexes: Sendable {
        let collection: CollectionSpec
        let id: UInt64
        let readyOnly: Bool
        let indexes: [CompiledIndex]

        init(collection: CollectionSpec, id: UInt64, readyOnly: Bool, indexes: [CompiledIndex]) {
            self.collection = collection
            self.id = id
            self.readyOnly = readyOnly
            self.indexes = indexes
        }
    }
    /// Documents indexed per transaction while building, so a large collection is indexed in
    /// several commits instead of one giant transaction.
    static let buildBatchSize = 2_000

    init(tables: StorageEnvironment.Tables) {
        self.tables = tables
    }

    struct Stored {
        var name: String
        var definition: IndexDefinition
        var ready: Bool
    }

    // MARK: - Reading

    /// The stored definitions of a collection, by name.
    func definitions(_ txn: ReadTransaction, _ collection: CollectionSpec) throws -> [Stored] {
        let prefix = StoreLayout.collectionPrefix(collection.number)
        var result: [Stored] = []
        try txn.scan(tables.indexes, prefix: prefix) { key, value in
            let bytes = Array(value)
            guard let flag = bytes.first else { return true }
            result.append(
                Stored(
                    name: String(decoding: key[prefix.count...], as: UTF8.self),
                    definition: try IndexDefinition(decoding: Array(bytes.dropFirst())), ready: flag == 1))
            return true
        }
        return result
    }

    /// The compiled indexes of a collection; with `readyOnly`, those a query may read (built).
    ///
    /// Read snapshots with the same transaction id see the same committed state, so their
    /// answer is kept per collection (writes always read the table: they may be the ones
    /// changing it, and an aborted write's id is reused). Compaction restarts ids: ``forgetSnapshots()``.
    func indexes(_ txn: ReadTransaction, _ collection: CollectionSpec, readyOnly: Bool) throws -> [CompiledIndex] {
        let isRead = !(txn is WriteTransaction)
        if isRead, let cached = snapshots.withLock({ $0[collection.number] }), cached.id == txn.id, cached.readyOnly == readyOnly,
            cached.collection == collection
        {
            return cached.indexes
        }
        let result = try load(txn, collection, readyOnly: readyOnly)
        if isRead {
            let answer = SnapshotIndexes(collection: collection, id: txn.id, readyOnly: readyOnly, indexes: result)
            snapshots.withLock { $0[collection.number] = answer }
        }
        return result
    }

    /// Forgets the per-snapshot answers (their transaction ids are about to be reused).
    func forgetSnapshots() {
        snapshots.withLock { $0.removeAll() }
    }

    private func load(_ txn: ReadTransaction, _ collection: CollectionSpec, readyOnly: Bool) throws -> [CompiledIndex] {
        let prefix = StoreLayout.collectionPrefix(collection.number)
        var result: [CompiledIndex] = []
        try txn.scan(tables.indexes, prefix: prefix) { key, value in
            guard let flag = value.first, flag == 1 || !readyOnly else { return true }
            let cacheKey = Array(key) + Array(value.dropFirst())
            if let cached = compiled.withLock({ $0[cacheKey] }), cached.collection == collection {
                if !readyOnly || cached.definition.entriesAreCurrent { result.append(cached) }
                return true
            }
            let index = try CompiledIndex(
                name: String(decoding: key[prefix.count...], as: UTF8.self),
                definition: try IndexDefinition(decoding: Array(value.dropFirst())),
                collection: collection)
            compiled.withLock { $0[cacheKey] = index }
            if !readyOnly || index.definition.entriesAreCurrent { result.append(index) }
            return true
        }
        return result
    }

    // MARK: - Maintenance (DocumentIndexing)

    func update(
        _ txn: WriteTransaction, _ collection: CollectionSpec, _ id: String,
        old: DocumentRecord?, new: DocumentRecord?
    ) throws {
        // Most databases define no index at all: then no write looks for definitions.
        guard try maintainsEntries(txn) else { return }
        let indexes = try indexes(txn, collection, readyOnly: false)
        guard !indexes.isEmpty else { return }
        let value = Array(id.utf8)
        for index in indexes {
            if index.definition.kind == .fullText {
                try updateFullText(txn, index, id, old: old, new: new)
                continue
            }
            let before = try old.map { try index.entryKeys(id: id, record: $0) } ?? []
            let after = try new.map { try index.entryKeys(id: id, record: $0) } ?? []
            let prefix = StoreLayout.indexEntriesPrefix(index.definition.number)
            for key in before.subtracting(after) { try txn.delete(tables.indexEntries, key: prefix + key, value: value) }
            for key in after.subtracting(before) { try txn.put(tables.indexEntries, key: prefix + key, value: value) }
        }
    }

    func maintainsEntries(_ txn: WriteTransaction) throws -> Bool { !(try txn.isEmpty(tables.indexes)) }

    func dropCollection(_ txn: WriteTransaction, _ collection: CollectionSpec) throws {
        for stored in try definitions(txn, collection) {
            try remove(txn, collection, stored)
        }
    }

    // MARK: - Definitions

    private func remove(_ txn: WriteTransaction, _ collection: CollectionSpec, _ stored: Stored) throws {
        if stored.definition.kind == .fullText { try fullTextStore(stored.definition).deleteAll(txn) }
        try txn.deleteAll(tables.indexEntries, prefix: StoreLayout.indexEntriesPrefix(stored.definition.number))
        try txn.delete(tables.indexes, key: StoreLayout.indexDefinitionKey(collection.number, stored.name))
    }

    private func store(
        _ txn: WriteTransaction, _ collection: CollectionSpec, _ name: String,
        _ definition: IndexDefinition, ready: Bool
    ) throws {
        try txn.put(
            tables.indexes, key: StoreLayout.indexDefinitionKey(collection.number, name),
            value: [ready ? 1 : 0] + (try definition.encoded()))
    }

    /// Records a new (unbuilt) index, replacing one of the same name with another configuration.
    /// Returns the definition to build, or nil when an identical, built index exists.
    func define(
        _ txn: WriteTransaction, _ collection: CollectionSpec, _ name: String,
        _ configuration: any IndexConfiguration
    ) throws -> IndexDefinition? {
        var definition = try IndexDefinition(number: 0, configuration: configuration)
        // Compile once now, so a bad expression fails before anything is written.
        _ = try CompiledIndex(name: name, definition: definition, collection: collection)
        if let existing = try definitions(txn, collection).first(where: { $0.name == name }) {
            if existing.definition.sameConfiguration(as: definition) && existing.ready
                && existing.definition.entriesAreCurrent
            {
                return nil
            }
            try remove(txn, collection, existing)
        }
        let number = StoreLayout.decodeUInt32(try txn.get(tables.meta, key: StoreLayout.nextIndexKey)) ?? 1
        try txn.put(tables.meta, key: StoreLayout.nextIndexKey, value: StoreLayout.encodeUInt32(number + 1))
        definition.number = number
        try store(txn, collection, name, definition, ready: false)
        if definition.kind == .fullText { try startFullText(txn, collection, definition) }
        return definition
    }

    /// Indexes up to ``buildBatchSize`` documents after `after` (a document key); returns the
    /// last key done, or nil when the collection is finished (and marks the index ready).
    func buildStep(
        _ txn: WriteTransaction, _ collection: CollectionSpec, _ name: String,
        _ definition: IndexDefinition, after: [UInt8]?
    ) throws -> [UInt8]? {
        // The index may have been dropped or replaced meanwhile: then there is nothing to do.
        guard let current = try definitions(txn, collection).first(where: { $0.name == name }),
            current.definition == definition
        else { return nil }
        let index = try CompiledIndex(name: name, definition: definition, collection: collection)
        let prefix = StoreLayout.collectionPrefix(collection.number)
        let entryPrefix = StoreLayout.indexEntriesPrefix(definition.number)
        var pending: [([UInt8], [UInt8])] = []
        var last: [UInt8]?
        var count = 0
        let start = after.map { $0 + [0] } ?? prefix
        try txn.scan(tables.documents, from: start, to: KeyEncoding.successor(ofPrefix: prefix)) { key, value in
            let record = try DocumentRecord(decoding: value)
            let idBytes = Array(key[prefix.count...])
            for tuple in try index.entryKeys(id: String(decoding: idBytes, as: UTF8.self), record: record) {
                pending.append((entryPrefix + tuple, idBytes))
            }
            last = Array(key)
            count += 1
            return count < Self.buildBatchSize
        }
        for (key, id) in pending { try txn.put(tables.indexEntries, key: key, value: id) }
        if count < Self.buildBatchSize {
            try store(txn, collection, name, definition, ready: true)
            return nil
        }
        return last
    }

    /// Marks a built index ready for queries.
    func markReady(_ txn: WriteTransaction, _ collection: CollectionSpec, _ name: String, _ definition: IndexDefinition) throws {
        try store(txn, collection, name, definition, ready: true)
    }

    /// Deletes the index `name`; false when there was none.
    func delete(_ txn: WriteTransaction, _ collection: CollectionSpec, _ name: String) throws -> Bool {
        guard let existing = try definitions(txn, collection).first(where: { $0.name == name }) else { return false }
        try remove(txn, collection, existing)
        return true
    }

    /// Clears the entries of `name` and marks it unbuilt (for a rebuild).
    func reset(_ txn: WriteTransaction, _ collection: CollectionSpec, _ name: String) throws -> IndexDefinition? {
        guard let existing = try definitions(txn, collection).first(where: { $0.name == name }) else { return nil }
        try txn.deleteAll(tables.indexEntries, prefix: StoreLayout.indexEntriesPrefix(existing.definition.number))
        try store(txn, collection, name, existing.definition, ready: false)
        if existing.definition.kind == .fullText { try startFullText(txn, collection, existing.definition) }
        return existing.definition
    }
}
