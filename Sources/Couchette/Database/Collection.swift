import Foundation

/// A named set of documents inside a ``Scope``; every document operation goes through one.
///
/// Reads run in their own LMDB snapshot on the caller's thread and never wait for writers.
/// Writes are encoded on the caller's side and committed by the ``Database`` actor.
///
/// ```swift
/// let tasks = try await db.createCollection(name: "tasks")
/// let doc = MutableDocument(id: "task-1").setString("Buy milk", forKey: "title")
/// try await tasks.save(document: doc)
/// let stored = try await tasks.document(id: "task-1")
/// ```
public final class Collection: Sendable, Hashable {
    let spec: CollectionSpec
    /// The database this collection belongs to.
    public let database: Database

    init(spec: CollectionSpec, database: Database) {
        self.spec = spec
        self.database = database
    }

    var core: DatabaseCore { database.core }
    /// The read seam the layers above Database/ use (``StoreReader``).
    var reader: StoreReader { database.reader }

    /// The collection's name.
    public var name: String { spec.name }
    /// The scope that holds this collection.
    public var scope: Scope { Scope(name: spec.scope, database: database) }
    /// `"scope.collection"`, e.g. `"_default.tasks"`.
    public var fullName: String { spec.fullName }

    /// The number of live (not deleted) documents.
    public var count: UInt64 {
        get async throws {
            try core.checkUsable(spec)
            return try core.read { try core.store.liveCount($0, spec) }
        }
    }

    /// Two collections are equal when they are the same scope and name in the same `Database`
    /// instance.
    public static func == (lhs: Collection, rhs: Collection) -> Bool {
        lhs.database === rhs.database && lhs.spec == rhs.spec
    }

    /// Hashes what ``==(_:_:)`` compares, so collections can key dictionaries and sets.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(ObjectIdentifier(database))
        hasher.combine(spec)
    }

    // MARK: - Reading

    /// The current revision of a document, or nil when it does not exist, was deleted or expired.
    ///
    /// - Throws: `.notOpen` when the database is closed or the collection deleted.
    nonisolated(nonsending) public func document(id: String) async throws -> Document? {
        try storedDocument(id: id)
    }

    /// The current revision of a document (with `includingDeleted`, also its tombstone), read in a
    /// snapshot on the caller's thread.
    func storedDocument(id: String, includingDeleted: Bool = false) throws -> Document? {
        // The database's open check and the collection's, once: a point read makes no other.
        try core.checkUsable(spec)
        return try core.environment.read {
            try core.store.document($0, spec, id, now: core.clock.nowMilliseconds(), includingDeleted: includingDeleted)
        }
    }

    /// The stored state of `id` including tombstones: its revision (nil if never stored) and its
    /// live document (nil if deleted, expired or absent).
    func storedState(id: String) throws -> (revisionID: String?, document: Document?) {
        guard let stored = try storedDocument(id: id, includingDeleted: true) else { return (nil, nil) }
        return (stored.revisionID, stored.isDeleted ? nil : stored)
    }

    // MARK: - Saving

    /// Saves `document` as the newest revision (last write wins), and updates its `revisionID`.
    ///
    /// - Throws: `.invalidParameter` when a property cannot be stored (NaN, infinity, an
    ///   unsupported type), naming the key; `.notOpen` after close; `CancellationError` when the
    ///   task is cancelled while the save waits for the writer (it is then not written; see
    ///   <doc:TheWritePath>).
    nonisolated(nonsending) public func save(document: MutableDocument) async throws {
        try await save(document: document, concurrencyControl: .lastWriteWins)
    }

    /// Saves `document` with the given concurrency control.
    ///
    /// With `.failOnConflict`, returns `false` and writes nothing when the stored document is not
    /// the revision `document` was read at — including a new `MutableDocument(id:)` whose id
    /// already exists.
    ///
    /// ```swift
    /// let saved = try await tasks.save(document: doc, concurrencyControl: .failOnConflict)
    /// if !saved { /* someone else changed it: re-read and retry */ }
    /// ```
    @discardableResult
    nonisolated(nonsending) public func save(
        document: MutableDocument,
        concurrencyControl: ConcurrencyControl
    ) async throws -> Bool {
        try core.checkUsable(spec)
        let heldBlobs = try core.installBlobs(of: document)
        defer { core.blobs.release(heldBlobs) }
        let operation = WriteOperation.save(
            spec, id: document.id, body: try document.encodeBody(), base: document.revisionID,
            control: concurrencyControl)
        return try await commit(operation, updating: document)
    }

    /// Saves `document`, calling `conflictHandler` whenever the stored document changed since
    /// `document` was read.
    ///
    /// The handler gets the caller's document (which it may edit) and the stored one (nil when it
    /// was deleted). Returning `true` saves the (edited) document on top of the stored revision;
    /// returning `false` cancels and the call returns `false`. If the stored document changes
    /// again while the handler runs, the handler runs again, so no update is lost.
    ///
    /// ```swift
    /// try await counters.save(document: doc) { mine, stored in
    ///     mine.setInt((stored?.int(forKey: "n") ?? 0) + 1, forKey: "n")
    ///     return true
    /// }
    /// ```
    @discardableResult
    nonisolated(nonsending) public func save(
        document: MutableDocument,
        conflictHandler: (MutableDocument, Document?) throws -> Bool
    ) async throws -> Bool {
        try core.checkUsable(spec)
        var heldBlobs = try core.installBlobs(of: document)
        defer { core.blobs.release(heldBlobs) }
        return try await saveResolvingConflicts(
            id: document.id, body: try document.encodeBody(), base: document.revisionID,
            control: .failOnConflict, updating: document
        ) { stored in
            guard try conflictHandler(document, stored) else { return nil }
            heldBlobs += try core.installBlobs(of: document)  // the handler may have set blobs
            return try document.encodeBody()
        }
    }

    // MARK: - Deleting and purging

    /// Deletes `document` (writes a tombstone revision), last write wins.
    /// - Throws: `.notFound` when the document does not exist.
    public func delete(document: Document) async throws {
        try await delete(document: document, concurrencyControl: .lastWriteWins)
    }

    /// Deletes `document`; with `.failOnConflict`, returns `false` when it changed since it was read.
    /// - Throws: `.notFound` when the document does not exist.
    @discardableResult
    public func delete(document: Document, concurrencyControl: ConcurrencyControl) async throws -> Bool {
        try core.checkUsable(spec)
        let operation = WriteOperation.delete(spec, id: document.id, base: document.revisionID, control: concurrencyControl)
        return try await commit(operation, updating: nil)
    }

    /// Removes every trace of `document` (not replicated).
    public func purge(document: Document) async throws {
        try await purge(id: document.id)
    }

    /// Removes every trace of the document `id` (not replicated).
    /// - Throws: `.notFound` when no such document (or tombstone) exists.
    public func purge(id: String) async throws {
        try core.checkUsable(spec)
        _ = try await database.perform(PendingWrite([.purge(spec, id: id)]))
    }

    // MARK: - Expiration

    /// Makes the document expire at `expiration` (nil removes it). An expired document reads as
    /// absent at once and is purged by a background task, also after the database is reopened.
    /// - Throws: `.notFound` when the document does not exist.
    public func setDocumentExpiration(id: String, expiration: Date?) async throws {
        try core.checkUsable(spec)
        let milliseconds = expiration.map { UInt64(max(1, ($0.timeIntervalSince1970 * 1000).rounded(.down))) } ?? 0
        _ = try await database.perform(PendingWrite([.setExpiration(spec, id: id, milliseconds: milliseconds)]))
        database.sweeper.wake(for: database)
    }

    /// The document's expiration, or nil when it has none.
    /// - Throws: `.notFound` when the document does not exist.
    public func getDocumentExpiration(id: String) async throws -> Date? {
        try core.checkUsable(spec)
        let record = try core.read { try core.store.visibleRecord($0, spec, id, now: core.clock.nowMilliseconds()) }
        guard let record else {
            throw CouchetteError(.notFound, "document '\(id)' not found in \(fullName)")
        }
        return record.expiration == 0 ? nil : Date(timeIntervalSince1970: Double(record.expiration) / 1000)
    }

    // MARK: - Committing

    /// Commits one write; on success tells `tracker` (the caller's document or model) its new
    /// revision. Returns false for a concurrency-control conflict.
    nonisolated(nonsending) func commit(_ operation: WriteOperation, updating tracker: (any RevisionTracking)?) async throws -> Bool {
        let outcomes = try await database.perform(PendingWrite([operation]))
        switch outcomes.first {
        case .saved(let revision, let sequence)?:
            tracker?.didCommit(revision: revision, sequence: sequence)
            return true
        case .conflict?:
            return false
        default:
            return true
        }
    }

    /// Saves `body` as document `id`, resolving conflicts until the write lands: a compare-and-swap
    /// loop. The first attempt compares against `base` with `control`; on a conflict `resolve`
    /// gets the stored document (nil when deleted or purged) and returns the body to retry with
    /// on top of it, or nil to give up (the call then returns false and nothing is written). If
    /// the document changes again meanwhile, `resolve` runs again with the newer version.
    nonisolated(nonsending) func saveResolvingConflicts(
        id: String, body: [UInt8], base: String?, control: ConcurrencyControl,
        updating tracker: any RevisionTracking,
        resolve: (Document?) throws -> [UInt8]?
    ) async throws -> Bool {
        var body = body
        var base = base
        var control = control
        while true {
            let operation = WriteOperation.save(spec, id: id, body: body, base: base, control: control)
            if try await commit(operation, updating: tracker) { return true }
            let stored = try storedState(id: id)
            guard let resolved = try resolve(stored.document) else { return false }
            body = resolved
            base = stored.revisionID
            control = .failOnConflict
        }
    }
}

extension Collection: CustomStringConvertible {
    /// `Collection(scope.name)`, for logs and debugging.
    public var description: String { "Collection(\(fullName))" }
}
