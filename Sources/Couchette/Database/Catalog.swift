/// Where a collection lives: its scope, its name and the number its keys are stored under.
struct CollectionSpec: Sendable, Hashable {
    let scope: String
    let name: String
    let number: UInt32

    var fullName: String { "\(scope).\(name)" }
}

/// The in-memory list of scopes and collections that lets catalog look-ups stay synchronous.
///
/// The database actor replaces it after every catalog change; a miss re-reads it from disk, since
/// another process may have created the collection.
///
/// The in-memory list is only a cache: another ``Database`` instance or process may delete a
/// collection and create one of the same name. Collection numbers are never reused (the
/// `next-collection` counter only grows), so a number names one incarnation of a collection, and
/// every write checks the numbers it uses against the catalog stored in its own write transaction
/// (``load(_:tables:)``, ``checkCurrent(_:in:tables:)``) before touching anything.
final class Catalog: Sendable {
    static let defaultName = "_default"

    /// Keyed by collection number: the check every read and write makes is a single look-up.
    private let specs = Locked<[UInt32: CollectionSpec]>([:])

    func replace(with list: [CollectionSpec]) {
        specs.withLock { specs in
            specs = Dictionary(uniqueKeysWithValues: list.map { ($0.number, $0) })
        }
    }

    func lookup(scope: String, name: String) -> CollectionSpec? {
        specs.withLock { $0.values.first { $0.scope == scope && $0.name == name } }
    }

    func contains(_ spec: CollectionSpec) -> Bool {
        specs.withLock { $0[spec.number] == spec }
    }

    /// Every collection by number, for resolving the numbers stored in keys.
    var byNumber: [UInt32: CollectionSpec] { specs.withLock { $0 } }

    var all: [CollectionSpec] {
        specs.withLock { Array($0.values) }.sorted { ($0.scope, $0.name) < ($1.scope, $1.name) }
    }

    /// Reads every collection recorded in the `meta` table.
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
