/// Where a collection lives: its scope, its name and the number its keys are stored under.
struct CollectionSpec: Sendable, Hashable {
    let scope: String
    let name: String
    let number: UInt32

    var fullName: String { "\(scope).\(name)" }
}

/// The in-memory list of scopes and collections that lets catalog look-ups stay synchronous.
///
/// The in-memory list is only a cache: another ``Database`` instance or process may delete a
/// collection and create one of the same name. Collection numbers are never reused (the
/// `next-collection` counter only grows), so a number names one incarnation of a collection, and
/// every write checks the numbers it uses against the catalog stored in its own write transaction
/// before touching anything.
///
/// The copy is kept with the catalog generation it was read under
/// (``StoreLayout/catalogGenerationKey``): every change to the stored catalog, by any process,
/// advances that counter in the same transaction, so a transaction that reads the generation the
/// copy has sees exactly the copy's catalog and need not read the `"c:"` entries again
/// (``current(in:store:)``). That is one look-up in the main database per commit instead of a
/// scan of the catalog.
final class Catalog: Sendable {
    static let defaultName = "_default"

    /// The copy and the generation it was read under (nil: not known to be any generation's).
    /// Keyed by collection number: the check every read and write makes is a single look-up.
    private let state = Locked<(generation: UInt64?, specs: [UInt32: CollectionSpec])>((nil, [:]))

    /// Makes `specs`, read under `generation`, the copy — unless the copy is of a later
    /// generation already (a reader that read an older snapshot must not take the copy back).
    func replace(with specs: [UInt32: CollectionSpec], generation: UInt64) {
        state.withLock { state in
            if let known = state.generation, known > generation { return }
            state = (generation, specs)
        }
    }

    /// The catalog as `txn` sees it: the copy when `txn` reads the generation it was read under,
    /// else the stored catalog, which then becomes the copy.
    @discardableResult
    func current(in txn: ReadTransaction, store: DocumentStore) throws -> [UInt32: CollectionSpec] {
        try current(in: txn, generation: try store.catalogGeneration(txn), tables: store.tables)
    }

    /// The catalog as the write transaction `txn` sees it (see above): its generation is read
    /// through the transaction's kept cursor.
    func current(in txn: WriteTransaction, store: DocumentStore) throws -> [UInt32: CollectionSpec] {
        try current(in: txn, generation: try store.catalogGeneration(txn), tables: store.tables)
    }

    /// The copy when it was read under `generation`, `txn`'s; else the catalog `txn` stores.
    private func current(
        in txn: ReadTransaction, generation: UInt64, tables: StorageEnvironment.Tables
    ) throws -> [UInt32: CollectionSpec] {
        if let specs = state.withLock({ $0.generation == generation ? $0.specs : nil }) { return specs }
        let specs = Dictionary(uniqueKeysWithValues: try Self.load(txn, tables: tables).map { ($0.number, $0) })
        replace(with: specs, generation: generation)
        return specs
    }

    func lookup(scope: String, name: String) -> CollectionSpec? {
        state.withLock { $0.specs.values.first { $0.scope == scope && $0.name == name } }
    }

    func contains(_ spec: CollectionSpec) -> Bool {
        state.withLock { $0.specs[spec.number] == spec }
    }

    /// Every collection by number, for resolving the numbers stored in keys.
    var byNumber: [UInt32: CollectionSpec] { state.withLock { $0.specs } }

    var all: [CollectionSpec] {
        state.withLock { Array($0.specs.values) }.sorted { ($0.scope, $0.name) < ($1.scope, $1.name) }
    }

    /// Reads every collection recorded in the `meta` table (``current(in:store:)`` reads it only
    /// when the copy is stale).
    static func load(_ txn: ReadTransaction, tables: StorageEnvironment.Tables) throws -> [CollectionSpec] {
        var list: [CollectionSpec] = []
        var numbers: Set<UInt32> = []
        try txn.scan(tables.meta, prefix: StoreLayout.collectionKeyPrefix) { key, value in
            let fullName = String(decoding: key[StoreLayout.collectionKeyPrefix.count...], as: UTF8.self)
            guard let dot = fullName.firstIndex(of: "."), let number = StoreLayout.decodeUInt32(value),
                numbers.insert(number).inserted
            else {
                throw CouchetteError(.corruption, "malformed catalog entry '\(fullName)'")
            }
            list.append(
                CollectionSpec(
                    scope: String(fullName[..<dot]),
                    name: String(fullName[fullName.index(after: dot)...]), number: number))
            return true
        }
        return list
    }

    /// Throws `.notOpen` unless `spec` is the collection the stored catalog has under its name in
    /// this transaction: a `Collection` object that outlived its collection (deleted, perhaps
    /// re-created, by another instance or process) must not write under a dead number.
    static func checkCurrent(_ spec: CollectionSpec, in txn: ReadTransaction, tables: StorageEnvironment.Tables) throws {
        let stored = StoreLayout.decodeUInt32(try txn.get(tables.meta, key: StoreLayout.collectionKey(scope: spec.scope, name: spec.name)))
        guard stored == spec.number else { throw deleted(spec) }
    }

    /// The error for a `Collection` object whose collection no longer exists.
    static func deleted(_ spec: CollectionSpec) -> CouchetteError {
        CouchetteError(.notOpen, "collection \(spec.fullName) has been deleted")
    }

    /// Couchbase Lite's naming rule for scopes and collections: 1–251 characters of
    /// `A-Z a-z 0-9 _ - %`, not starting with `_` or `%` (except the reserved `_default`).
    static func validate(_ name: String, kind: String) throws {
        if name == defaultName { return }
        let allowed = name.unicodeScalars.allSatisfy { scalar in
            switch scalar {
            case "A"..."Z", "a"..."z", "0"..."9", "_", "-", "%": true
            default: false
            }
        }
        guard (1...251).contains(name.count), allowed, name.first != "_", name.first != "%" else {
            throw CouchetteError(
                .invalidParameter,
                "invalid \(kind) name '\(name)': use 1-251 characters of A-Z a-z 0-9 _ - %, not starting with _ or %")
        }
    }
}
