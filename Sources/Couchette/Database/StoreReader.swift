/// The read side of an open database, and all the layers above Database/ (Query, Indexes,
/// Changes, Replication, the Listener) see of it, in the spirit of GRDB's `DatabaseReader`:
/// reads in a consistent ``StoreSnapshot`` on the caller's thread, the checks that the database
/// is open and a collection still exists, and a few facts about the file. Writes go through
/// ``Database/perform(_:)`` (index definitions and builds through ``Database/writeIndexes(in:usingReserve:_:)``).
///
/// ```swift
/// let count = try reader.read { try $0.liveCount(spec) }
/// ```
struct StoreReader: Sendable {
    private let core: DatabaseCore

    init(core: DatabaseCore) {
        self.core = core
    }

    /// The database's name.
    var name: String { core.name }
    var configuration: DatabaseConfiguration { core.configuration }
    /// The environment's folder (what the cross-process monitor watches).
    var directoryPath: String { core.environment.path }
    /// The id of the last transaction committed to the file, by any process.
    var lastTransactionID: UInt64 { core.environment.lastTransactionID }
    /// Size of `data.mdb` in bytes.
    var fileSize: UInt64 { core.environment.fileSize }

    var isOpen: Bool { core.isOpenNow }

    /// The wall clock expirations are compared with (the visibility rule's `now`).
    var clock: any WallClock { core.clock }

    /// Throws `.notOpen` when the database is closed.
    func checkOpen() throws { try core.checkOpen() }

    /// Throws `.notOpen` when the database is closed or the collection was deleted.
    func checkUsable(_ spec: CollectionSpec) throws { try core.checkUsable(spec) }

    /// The collection `scope.name` as the file has it now, or nil.
    func spec(scope: String, name: String) throws -> CollectionSpec? { try core.spec(scope: scope, name: name) }

    /// Blob contents (files beside `data.mdb`): what saves of models, replication and the
    /// listener store and serve.
    var blobs: BlobStore { core.blobs }

    /// Every collection as this instance last saw it.
    var collections: [CollectionSpec] { core.catalog.all }

    /// This database's UUID (32 hex digits): part of replication ids.
    func uuid() throws -> String { try core.uuid() }

    /// Runs `body` in a snapshot of its own; throws `.notOpen` when the database is closed.
    func read<R>(_ body: (StoreSnapshot) throws -> R) throws -> R {
        let store = core.store
        let indexes = core.indexes
        return try core.read { txn in try body(StoreSnapshot(txn: txn, store: store, indexes: indexes)) }
    }
}
