import Synchronization

/// The writes of one ``Database/inBatch(_:)`` call, collected on the caller's side.
///
/// Valid only inside the batch body; using it afterwards throws `.invalidParameter`. Documents
/// are encoded when you call a method, so later edits to a `MutableDocument` are not included.
///
/// ```swift
/// let draft = try await drafts.document(id: "order-7")     // the body is synchronous: read first
/// try await db.inBatch { batch in
///     try batch.save(document: MutableDocument(id: "order-7").setInt(3, forKey: "items"), in: orders)
///     if let draft { try batch.delete(document: draft, in: drafts) }
/// }
/// ```
public final class Batch {
    let database: Database
    /// Unchecked exclusivity (here and on ``trackers``): a batch is not `Sendable` and is used only
    /// inside its body, by one task, and no access to either overlaps another (each append is
    /// done before the next begins). The runtime checks cost more than the appends they guard.
    @exclusivity(unchecked) private(set) var operations: [WriteOperation] = []
    /// The models to update with their new revisions, in operation order (so that an object
    /// written twice ends at its last revision). `entry` is the model's index in a
    /// ``WriteOperation/saveJSON(_:)`` run, -1 for an operation of its own. Documents are not held
    /// here: they learn their revisions from ``revisions``.
    @exclusivity(unchecked) private var trackers: [(operation: Int, entry: Int, tracker: any RevisionTracking)] = []
    /// What this batch's writes became once it commits, for the documents saved in it.
    let revisions = BatchRevisions()
    /// Whether a document saved in this batch will ask ``revisions`` for its new revision.
    private var savedDocuments = false
    /// Tells this batch apart from every other in the process: a model written in it is marked
    /// with it (``DocumentID/batchWrite``), so a batch of many models needs no table of them.
    let serial = Batch.serials.add(1, ordering: .relaxed).newValue
    private static let serials = Atomic<UInt64>(0)
    /// The collections one document or model was written to in a batch, marked on the object
    /// itself (``MutableDocument/markWritten(in:to:)``, ``DocumentID/batchWrite``) with the
    /// batch (its ``revisions``, its ``serial``): no table of the batch's objects is hashed per save.
    typealias WrittenCollections = Couchette.WrittenCollections
    private var isClosed = false
    /// Encodes the new documents saved in this batch, one after another (see ``saveNew(_:in:_:)``).
    /// Unchecked exclusivity, as ``operations`` (here, on ``heldBlobs``, ``jsonDocuments`` and
    /// ``jsonCollection``, which every save touches): nothing the encoding calls reaches the batch.
    @exclusivity(unchecked) private var bodyEncoder = ValueEncoder(capacity: 1024)
    /// Digests of blobs stored for this batch's documents, held against compaction until the
    /// batch commits (``Database/inBatch(_:)`` releases them).
    @exclusivity(unchecked) var heldBlobs: [String] = []

    init(database: Database) { self.database = database }

    /// A batch whose body failed (it was never closed) will not be written: the revision digests
    /// its JSON documents still wait for are skipped.
    deinit {
        revisions.abandon()  // nothing once it committed
        guard !isClosed else { return }
        updates.cancel()
        jsonDocuments?.abandon()
        for case .saveJSON(let documents) in operations { documents.digester.cancel() }
    }

    /// Adds the save of `document` to the batch (encoded now; later edits are not included).
    ///
    /// With `.failOnConflict`, a document that changed since it was read fails the whole batch
    /// with `.conflict`. Saving the same `MutableDocument` again in the batch builds on its first
    /// write, which already checked its revision.
    public func save(
        document: MutableDocument, in collection: Collection,
        concurrencyControl: ConcurrencyControl = .lastWriteWins
    ) throws {
        guard let revision = document.revision else { return try saveNew(document, in: collection, concurrencyControl) }
        try check(collection)
        let blobs = try collection.core.installBlobs(of: document)
        if !blobs.isEmpty { heldBlobs += blobs }
        let body = try document.encodeBody()
        let control = markWritten(document, to: collection) ? .lastWriteWins : concurrencyControl
        // The base is compared only under .failOnConflict: otherwise its text is not even made.
        append(
            .save(
                collection.spec, id: document.id, body: body, base: control == .failOnConflict ? document.revisionID : nil,
                control: control))
        record(document, at: BatchRevisions.Position(operation: operations.count - 1, entry: -1))
        // Its new revision, should the document still be at the one it was read at, is hashed
        // now, off the writer thread.
        updates.add(operation: operations.count - 1, parent: revision, body: body)
    }

    /// The revisions of the updates saved in this batch, computed while it is filled.
    private var updates = UpdateRevisions.Builder()
    /// ``updates`` once the batch is closed, for its ``PendingWrite``.
    private(set) var updateRevisions: UpdateRevisions?

    /// Saves a document that has no revision yet: its body joins the run of new documents (see
    /// ``addNew(id:body:in:control:tracking:)``). Without a base revision, a save under either
    /// concurrency control means what it means for a JSON document: `.lastWriteWins` replaces an
    /// existing document, `.failOnConflict` fails the batch if it exists and is live.
    private func saveNew(_ document: MutableDocument, in collection: Collection, _ concurrencyControl: ConcurrencyControl) throws {
        try checkOpen()
        if jsonCollection !== collection { try check(collection) }
        try DocumentStore.validate(id: document.id)
        heldBlobs += try collection.core.installBlobs(of: document)
        let body = try document.encodeBody(reusing: &bodyEncoder)
        let control = markWritten(document, to: collection) ? .lastWriteWins : concurrencyControl
        if let position = try addNew(id: document.id, body: body, in: collection, control: control) { record(document, at: position) }
    }

    /// Marks `document` as written to `collection` in this batch, on the document itself (no
    /// table of every document in the batch, no hashing); returns whether it was already.
    private func markWritten(_ document: MutableDocument, to collection: Collection) -> Bool {
        document.markWritten(in: revisions, to: collection.spec.number)
    }

    /// Tells `document` where its write sits, to learn its revision from after the commit.
    private func record(_ document: MutableDocument, at position: BatchRevisions.Position) {
        document.recordWrite(at: position)
        savedDocuments = true
    }

    /// Adds a new document's body (already encoded, its id valid) to the run of documents saved
    /// without a base revision (``jsonDocuments``), which the writer stores as it stores JSON
    /// documents: no revision id or record value made per document, and the revision digests
    /// computed on another thread while the caller encodes the next documents. `tracker` learns
    /// its revision after the commit. A document that exists by then gets a new revision of its
    /// current one, as a save without a base revision would through its own operation.
    func addNew(
        id: String, body: [UInt8], in collection: Collection, control: ConcurrencyControl, tracking tracker: any RevisionTracking
    ) throws {
        guard let position = try addNew(id: id, body: body, in: collection, control: control) else { return }
        trackers.append((position.operation, position.entry, tracker))
    }

    /// ``addNew(id:body:in:control:tracking:)`` with no tracker: returns where the write sits.
    private func addNew(
        id: String, body: [UInt8], in collection: Collection, control: ConcurrencyControl
    ) throws -> BatchRevisions.Position? {
        try startJSONDocuments(in: collection, control)
        guard let entry = jsonDocuments?.append(id: id, body: body) else { return nil }
        // The run becomes the next operation when it is finished (before any other is appended).
        let position = BatchRevisions.Position(operation: operations.count, entry: entry)
        startNextBufferIfFull()
        return position
    }

    /// Adds the deletion of `document` (a tombstone revision) to the batch.
    ///
    /// With `.failOnConflict`, a document that changed since it was read fails the whole batch with
    /// `.conflict`; a document that does not exist fails it with `.notFound`.
    public func delete(
        document: Document, in collection: Collection,
        concurrencyControl: ConcurrencyControl = .lastWriteWins
    ) throws {
        try check(collection)
        append(.delete(collection.spec, id: document.id, base: document.revisionID, control: concurrencyControl))
    }

    /// Adds the purge of the document `id` to the batch: every trace of it is removed, and the purge
    /// is not replicated. A document that does not exist fails the whole batch with `.notFound`.
    public func purge(id: String, in collection: Collection) throws {
        try check(collection)
        append(.purge(collection.spec, id: id))
    }

    /// Adds a write; `tracker` learns its new revision after the commit.
    func append(_ operation: WriteOperation, tracking tracker: (any RevisionTracking)? = nil) {
        finishJSONDocuments()
        if let tracker { trackers.append((operations.count, -1, tracker)) }
        operations.append(operation)
    }

    /// JSON documents saved since the last other write, for one collection and concurrency
    /// control (see ``save(id:json:in:concurrencyControl:)``): they become one operation.
    @exclusivity(unchecked) var jsonDocuments: JSONDocumentBatch.Builder?
    /// The collection object ``jsonDocuments`` was last checked for: a run of saves into one
    /// collection checks it once. Set exactly while ``jsonDocuments`` is (``finishJSONDocuments()``
    /// tests it instead).
    @exclusivity(unchecked) var jsonCollection: Collection?

    /// Ends the current run of JSON documents, so that later writes come after them.
    func finishJSONDocuments() {
        // Checked on the collection, a reference, before the run is copied out: most writes
        // (every update) follow no run, and testing the optional run itself copies it.
        guard jsonCollection != nil, var documents = jsonDocuments else { return }
        jsonDocuments = nil
        jsonCollection = nil
        if !documents.isEmpty { operations.append(.saveJSON(documents.finished())) }
    }

    /// The collection the last write was checked against: a run of writes into one collection
    /// checks it once (the writer checks every write's collection again when it commits).
    private var checkedCollection: Collection?

    func check(_ collection: Collection) throws {
        try checkOpen()
        if collection === checkedCollection { return }
        guard collection.database === database else {
            throw CouchetteError(.invalidParameter, "collection \(collection.fullName) belongs to another database")
        }
        try collection.core.checkUsable(collection.spec)
        checkedCollection = collection
    }

    func close() {
        finishJSONDocuments()
        updateRevisions = updates.finished()
        isClosed = true
    }

    /// Throws unless the batch body is still running.
    func checkOpen() throws {
        guard !isClosed else {
            throw CouchetteError(.invalidParameter, "a Batch can only be used inside its inBatch body")
        }
    }

    /// Whether documents or models saved in this batch learn their new revisions after the commit.
    var tracksRevisions: Bool { savedDocuments || !trackers.isEmpty }

    /// Gives saved documents (when they next ask) and models their new revisions after the commit.
    func apply(_ outcomes: [WriteOutcome]) {
        guard tracksRevisions else { return }
        revisions.commit(outcomes, of: operations)
        for (operation, entry, tracker) in trackers {
            let result = revisions.result(at: BatchRevisions.Position(operation: operation, entry: entry))
            if case .written(let revision, let sequence) = result { tracker.didCommit(revision: revision, sequence: sequence) }
        }
    }
}
