import Synchronization

/// The state of one open database that lives outside the actor: the environment (with the
/// ``DocumentStore`` and ``IndexRegistry`` over its tables), the catalog, the write queue and the
/// commit observers. Only Database/ sees it; the layers above read through ``StoreReader``.
final class DatabaseCore: Sendable {
    let name: String
    let path: String
    let configuration: DatabaseConfiguration
    let environment: StorageEnvironment
    let store: DocumentStore
    /// Blob contents, as files beside `data.mdb` (see ``BlobStore``).
    let blobs: BlobStore
    /// Index definitions and entries (the query layer's, behind ``DocumentStore/indexes``).
    let indexes: IndexRegistry
    let catalog = Catalog()
    /// The wall clock expiration reads (``SystemClock`` unless a test gives another).
    let clock: any WallClock
    let observers = CommitObservers()
    private let isOpen = Atomic<Bool>(true)
    /// Whether the file held an expiration when this instance opened it (then the expiration
    /// sweeper starts at once; otherwise with the first expiration set, see ``ExpirationSweeper``).
    let hadExpirationsAtOpen: Bool

    init(name: String, path: String, configuration: DatabaseConfiguration, clock: any WallClock) throws {
        self.name = name
        self.clock = clock
        self.path = path
        self.configuration = configuration
        writeQueue = WriteQueue(pacing: GroupCommitPacing(limits: configuration.groupCommitWait))
        if let maximum = configuration.maximumSize, maximum < SizeLimit.minimum {
            throw CouchetteError(.invalidParameter, "maximumSize \(maximum) is too small: at least \(SizeLimit.minimum) bytes")
        }
        environment = try EnvironmentRegistry.shared.acquire(
            path: path, sizeLimit: SizeLimit(maximum: configuration.maximumSize), syncsMetaPage: configuration.fullSync)
        indexes = IndexRegistry(tables: environment.tables)
        store = DocumentStore(tables: environment.tables, indexes: indexes, historyLimit: configuration.maxRevisionHistory)
        blobs = BlobStore(databasePath: path, fullSync: configuration.fullSync)
        do {
            hadExpirationsAtOpen = try Self.prepareFormatAndLoadCatalog(environment, store, catalog, path: path)
            blobs.registerOpen()
        } catch {
            EnvironmentRegistry.shared.release(environment)
            throw error
        }
    }

    /// Writes the format version and the default collection on first open; upgrades older formats
    /// and refuses newer ones;
    /// loads the catalog, and tells whether an expiration is stored. Opening an existing, current
    /// database takes one read transaction for all of it: the first read needs nothing else (index
    /// definitions are read by the queries and writes that use them, see ``IndexRegistry``).
    private static func prepareFormatAndLoadCatalog(
        _ environment: StorageEnvironment, _ store: DocumentStore, _ catalog: Catalog, path: String
    ) throws -> Bool {
        typealias Opened = (version: UInt32?, hasUUID: Bool, hasExpirations: Bool)
        let opened = try environment.read { txn -> Opened in
            guard let version = try store.formatVersion(txn) else { return (nil, false, false) }
            guard version == StoreLayout.formatVersion else { return (version, false, false) }
            try catalog.current(in: txn, store: store)
            return (version, try store.uuid(txn) != nil, try store.nextExpiration(txn) != nil)
        }
        func reloadCatalog() throws -> Bool {
            try environment.read { txn in
                try catalog.current(in: txn, store: store)
                return try store.nextExpiration(txn) != nil
            }
        }
        guard let stored = opened.version else {
            try environment.write { try store.initializeFormat($0, uuid: Self.newUUID()) }
            return try reloadCatalog()
        }
        guard stored == StoreLayout.formatVersion else {
            guard stored < StoreLayout.formatVersion else {
                throw CouchetteError(
                    .corruption, "\(path) has storage format \(stored); this version reads format \(StoreLayout.formatVersion)")
            }
            try environment.write { txn in
                // Another process may have upgraded it meanwhile: read the version again.
                guard let current = try store.formatVersion(txn), current != StoreLayout.formatVersion else { return }
                try store.upgradeFormat(txn, from: current)
            }
            return try prepareFormatAndLoadCatalog(environment, store, catalog, path: path)
        }
        guard opened.hasUUID else {
            // Databases created before replication have no UUID yet: give them one.
            try environment.write { try store.setUUIDIfMissing($0, Self.newUUID()) }
            return try reloadCatalog()
        }
        return opened.hasExpirations
    }

    private static func newUUID() -> String {
        RevisionID.hex((0..<16).map { _ in UInt8.random(in: 0...255) })
    }

    /// This database's UUID (32 hex digits), stored at creation: part of replication ids.
    func uuid() throws -> String {
        guard let uuid = try read({ try store.uuid($0) }) else { throw CouchetteError(.corruption, "database '\(name)' has no UUID") }
        return uuid
    }

    /// Brings the in-memory catalog up to the stored one: one look-up of the catalog generation
    /// when nothing changed (see ``Catalog/current(in:store:)``).
    func reloadCatalog() throws {
        _ = try environment.read { try catalog.current(in: $0, store: store) }
    }

    // MARK: - Open state

    var isOpenNow: Bool { isOpen.load(ordering: .acquiring) }

    func checkOpen() throws {
        guard isOpenNow else { throw CouchetteError(.notOpen, "database '\(name)' is closed") }
    }

    /// Marks the database closed; returns false when it already was.
    func markClosed() -> Bool {
        let wasOpen = isOpen.exchange(false, ordering: .acquiringAndReleasing)
        if wasOpen { blobs.unregisterOpen() }
        return wasOpen
    }

    /// Looks a collection up in the stored catalog (another instance or process may have created,
    /// deleted or re-created it since this one last looked).
    func spec(scope: String, name: String) throws -> CollectionSpec? {
        try currentCatalog().first { $0.scope == scope && $0.name == name }
    }

    /// Every collection as the file has it now: for the look-ups users make by name, which must
    /// not answer from a cache another instance or process has made stale (the copy is used when
    /// the stored catalog generation shows it current).
    func currentCatalog() throws -> [CollectionSpec] {
        try checkOpen()
        try reloadCatalog()
        return catalog.all
    }

    /// Throws `.notOpen` when the database is closed or the collection was deleted.
    func checkUsable(_ spec: CollectionSpec) throws {
        try checkOpen()
        guard catalog.contains(spec) else { throw Catalog.deleted(spec) }
    }

    /// Runs a read in its own snapshot, outside the actor.
    func read<R>(_ body: (ReadTransaction) throws -> R) throws -> R {
        try checkOpen()
        return try environment.read(body)
    }

    // MARK: - Write queue

    /// Writes waiting for a commit, and who commits them (see ``Database/perform(_:)``).
    let writeQueue: WriteQueue
}
