/// Document-level reads and writes inside one LMDB transaction: records, revision trees, the
/// sequence index, live counts and expirations, always updated together.
///
/// It knows nothing of actors or queues; ``Database`` decides which transaction to run it in.
struct DocumentStore: Sendable {
    let tables: StorageEnvironment.Tables
    /// Kept current in the same transaction as every write of a current record.
    let indexes: any DocumentIndexing
    /// Ancestors kept per leaf of a revision tree (``DatabaseConfiguration/maxRevisionHistory``).
    var historyLimit = RevisionTree.defaultHistoryLimit

    /// Every collection's sequence index: the `sequences` table and the tails in the main database.
    var sequenceIndex: SequenceIndex { SequenceIndex(tables: tables) }

    // MARK: - Reading

    func record(_ txn: ReadTransaction, _ collection: CollectionSpec, _ id: String) throws -> DocumentRecord? {
        try record(txn, key: StoreLayout.documentKey(collection.number, id))
    }

    /// The record stored under `key` (``StoreLayout/documentKey(_:_:)``), or nil.
    private func record(_ txn: ReadTransaction, key: [UInt8]) throws -> DocumentRecord? {
        try txn.get(tables.documents, key: key).map(DocumentRecord.init(decoding:))
    }

    /// The record of `id` when a reader may see it (``DocumentRecord/isVisible(now:includingDeleted:)``), or nil.
    func visibleRecord(
        _ txn: ReadTransaction, _ collection: CollectionSpec, _ id: String, now: @autoclosure () -> UInt64,
        includingDeleted: Bool = false
    ) throws -> DocumentRecord? {
        guard let record = try record(txn, collection, id), record.isVisible(now: now(), includingDeleted: includingDeleted) else {
            return nil
        }
        return record
    }

    /// Calls `body` with the record of `id` (its body left empty) and its encoded body where it
    /// lies in the map, when a reader may see it; nil when not. The bytes are valid only inside
    /// `body`, which must copy whatever it keeps.
    func withVisibleRecord<R>(
        _ txn: ReadTransaction, _ collection: CollectionSpec, _ id: String, now: UInt64, includingDeleted: Bool,
        _ body: (DocumentRecord, UnsafeRawBufferPointer) throws -> R
    ) throws -> R? {
        // The key on the stack: index lookups fetch each document they find through here.
        guard let bytes = try StoreLayout.withDocumentKey(collection.number, id, { try txn.get(tables.documents, key: $0) }) else {
            return nil
        }
        var bodyStart = 0
        let record = try DocumentRecord(decodingHeaderOf: bytes, bodyStart: &bodyStart)
        guard record.isVisible(now: now, includingDeleted: includingDeleted) else { return nil }
        return try body(record, UnsafeRawBufferPointer(rebasing: bytes[bodyStart...]))
    }

    /// The live, unexpired document (or, `includingDeleted`, also its tombstone), or nil.
    func document(
        _ txn: ReadTransaction, _ collection: CollectionSpec, _ id: String, now: @autoclosure () -> UInt64,
        includingDeleted: Bool = false
    ) throws -> Document? {
        // The record's header is decoded where it lies and only the body copied, once.
        try StoreLayout.withDocumentKey(collection.number, id) { key in
            guard let stored = try txn.get(tables.documents, key: key) else { return nil }
            var bodyStart = 0
            let record = try DocumentRecord(decodingHeaderOf: stored, bodyStart: &bodyStart)
            guard record.isVisible(now: now(), includingDeleted: includingDeleted) else { return nil }
            return Document(
                id: id, revision: record.revision, sequence: record.sequence, isDeleted: record.isDeleted,
                body: Array(UnsafeRawBufferPointer(rebasing: stored[bodyStart...])))
        }
    }

    /// Calls `body` with every visible record of `collection` in document-id order, until it
    /// returns false. Visibility is checked, and `skipping` shown the encoded body where it lies,
    /// before a body is copied out of the map: records it rejects are passed over.
    func forEachVisibleRecord(
        _ txn: ReadTransaction, _ collection: CollectionSpec, now: UInt64, includingDeleted: Bool,
        skipping rejects: ((UnsafeRawBufferPointer) -> Bool)? = nil,
        _ body: (String, DocumentRecord) throws -> Bool
    ) throws {
        let prefix = StoreLayout.collectionPrefix(collection.number)
        try txn.scan(tables.documents, prefix: prefix) { key, value in
            var bodyStart = 0
            var record = try DocumentRecord(decodingHeaderOf: value, bodyStart: &bodyStart)
            guard record.isVisible(now: now, includingDeleted: includingDeleted) else { return true }
            let stored = UnsafeRawBufferPointer(rebasing: value[bodyStart...])
            if let rejects, rejects(stored) { return true }
            record.body = Array(stored)
            return try body(String(decoding: key[prefix.count...], as: UTF8.self), record)
        }
    }

    /// The revision tree of `id` (empty when the document does not exist).
    ///
    /// A document whose whole history is its current revision (a fresh save, or a single grafted
    /// revision without ancestors) has no `revisions` entry: the record already says everything
    /// its one-node tree would, so the tree is rebuilt from the record. A stored entry always wins.
    func revisionTree(_ txn: ReadTransaction, _ collection: CollectionSpec, _ id: String) throws -> RevisionTree {
        if let stored = try storedTree(txn, collection, id) { return stored }
        return try record(txn, collection, id).map(Self.soleRevisionTree) ?? RevisionTree()
    }

    /// The revision tree of a document whose current record is `current`, already read.
    func revisionTree(_ txn: ReadTransaction, _ collection: CollectionSpec, _ id: String, current: DocumentRecord) throws -> RevisionTree {
        try storedTree(txn, collection, id) ?? Self.soleRevisionTree(current)
    }

    private func storedTree(_ txn: ReadTransaction, _ collection: CollectionSpec, _ id: String) throws -> RevisionTree? {
        try txn.get(tables.revisions, key: StoreLayout.documentKey(collection.number, id)).map(RevisionTree.init(decoding:))
    }

    /// The tree a document without a `revisions` entry has: its current revision alone.
    private static func soleRevisionTree(_ record: DocumentRecord) -> RevisionTree {
        var tree = RevisionTree()
        tree.add(record.revisionID, parent: nil, isDeleted: record.isDeleted, sequence: record.sequence)
        return tree
    }

    /// Whether `tree`, about to become the history of a record written under `sequence`, says no
    /// more than that record: then it is not stored (see ``revisionTree(_:_:_:)``).
    private static func isSoleRevision(_ tree: RevisionTree, sequence: UInt64) -> Bool {
        tree.nodes.count == 1 && tree.nodes[0].parent == nil && tree.nodes[0].sequence == sequence
    }

    func liveCount(_ txn: ReadTransaction, _ collection: CollectionSpec) throws -> UInt64 {
        StoreLayout.decodeUInt64(try txn.get(tables.counters, key: StoreLayout.countKey(collection.number)))
    }

    /// Tombstones and the bytes of current records (bodies and their metadata) of a collection,
    /// for CouchDB's `doc_del_count` and `sizes`: one pass over its keys, values not copied.
    func statistics(_ txn: ReadTransaction, _ collection: CollectionSpec) throws -> (deleted: UInt64, recordBytes: UInt64) {
        let deleted = try sequenceIndex.census(txn, collection.number).deleted
        var bytes: UInt64 = 0
        try txn.scan(tables.documents, prefix: StoreLayout.collectionPrefix(collection.number)) { _, value in
            bytes += UInt64(value.count)
            return true
        }
        return (deleted, bytes)
    }

    func lastSequence(_ txn: ReadTransaction, _ collection: CollectionSpec) throws -> UInt64 {
        StoreLayout.decodeUInt64(try txn.get(tables.counters, key: StoreLayout.sequenceCounterKey(collection.number)))
    }

    /// How many purges (expired documents' included) `collection` has seen (see ``StoreLayout/purgeCountKey(_:)``).
    func purgeCount(_ txn: ReadTransaction, _ collection: CollectionSpec) throws -> UInt64 {
        StoreLayout.decodeUInt64(try txn.get(tables.meta, key: StoreLayout.purgeCountKey(collection.number)))
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
    /// `precomputed`: for a save, the revision it gives the document when found at the given
    /// revision (nil: not found), if computed before the commit (``PendingWrite/precomputedRevision(at:replacing:)``).
    func apply(
        _ operation: WriteOperation, in context: WriteContext,
        precomputed: (StoredRevisionID?) -> StoredRevisionID? = { _ in nil }
    ) throws -> WriteOutcome {
        func checkExists(_ collection: CollectionSpec) throws {
            guard context.isCurrent(collection) else { throw Catalog.deleted(collection) }
        }
        let txn = context.txn
        switch operation {
        case .save(let collection, let id, let body, let base, let control):
            try checkExists(collection)
            return try writeRevision(
                context, collection, id, body: body, deleting: false, base: base, control: control, precomputed: precomputed)
        case .saveJSON(let documents):
            try checkExists(documents.collection)
            return .savedDocuments(try saveJSON(context, documents))
        case .delete(let collection, let id, let base, let control):
            try checkExists(collection)
            return try writeRevision(context, collection, id, body: Document.emptyBody, deleting: true, base: base, control: control)
        case .purge(let collection, let id):
            try checkExists(collection)
            guard let record = try record(txn, collection, id) else {
                throw CouchetteError(.notFound, "document '\(id)' not found in \(collection.fullName)")
            }
            try purge(context, collection, id, record)
            context.recordPurge(collection, id, replacing: record.sequence)
            context.countPurge(collection)
            return .done
        case .setExpiration(let collection, let id, let milliseconds):
            try checkExists(collection)
            guard let old = try visibleRecord(txn, collection, id, now: context.now) else {
                throw CouchetteError(.notFound, "document '\(id)' not found in \(collection.fullName)")
            }
            var new = old
            new.expiration = milliseconds
            try replaceCurrent(context, collection, id, old: old, new: new)
            return .done
        case .purgeExpired(let now):
            try purgeExpired(context, now: now)
            return .done
        case .graft(let collection, let revision):
            try checkExists(collection)
            return try graft(context, collection, revision)
        case .resolveConflict(let collection, let resolution):
            try checkExists(collection)
            return try resolve(context, collection, resolution)
        case .putLocal(let collection, let id, let body, let condition):
            try checkExists(collection)
            return try putLocal(txn, collection, id, body: body, condition: condition)
        }
    }

    /// Whether any secondary index exists in `context`'s transaction: asked of ``indexes`` once
    /// per context (see ``WriteContext/maintainsIndexes``), not at every write of a commit.
    private func maintainsIndexes(_ context: WriteContext) throws -> Bool {
        if let known = context.maintainsIndexes { return known }
        let answer = try indexes.maintainsEntries(context.txn)
        context.maintainsIndexes = answer
        return answer
    }

    /// The current record of `id`, or nil; an expired one is purged first, since it no longer exists.
    /// `key` is the document's key when the caller has it already.
    /// Without `body`, the record's body is left empty (not copied out of the map), for a write
    /// that needs only its header: no index to update from it, and no branch to keep it in.
    private func currentRecord(
        _ context: WriteContext, _ collection: CollectionSpec, _ id: String, body: Bool = true
    ) throws -> DocumentRecord? {
        try StoreLayout.withDocumentKey(collection.number, id) { try currentRecord(context, collection, id, key: $0, body: body) }
    }

    /// ``currentRecord(_:_:_:body:)`` with the document's key (``StoreLayout/withDocumentKey(_:_:_:)``) at hand.
    private func currentRecord(
        _ context: WriteContext, _ collection: CollectionSpec, _ id: String, key: UnsafeRawBufferPointer, body: Bool = true
    ) throws -> DocumentRecord? {
        // Through the kept cursor: the write of this record that usually follows finds it there.
        guard let stored = try context.txn.getNear(tables.documents, key: key) else { return nil }
        var bodyStart = 0
        var existing = try DocumentRecord(decodingHeaderOf: stored, bodyStart: &bodyStart)
        if existing.isExpired(now: context.now) {
            existing.body = Array(stored[bodyStart...])  // a purge hands the old record to the indexes
            try purge(context, collection, id, existing)
            return nil
        }
        if body { existing.body = Array(stored[bodyStart...]) }
        return existing
    }

    /// The one check of a document id, for local writes and replicated revisions alike: LMDB keys
    /// are at most 511 bytes, which leaves 480 for the id (see ``StoreLayout``).
    static func validate(id: String) throws {
        guard !id.isEmpty, id.utf8.count <= StoreLayout.maximumDocumentIDLength else {
            throw CouchetteError(.invalidParameter, "document id '\(id)' must be 1 to \(StoreLayout.maximumDocumentIDLength) bytes long")
        }
    }

    func writeRevision(
        _ context: WriteContext, _ collection: CollectionSpec, _ id: String,
        body: [UInt8], deleting: Bool, base: String?, control: ConcurrencyControl,
        precomputed: (StoredRevisionID?) -> StoredRevisionID? = { _ in nil }
    ) throws -> WriteOutcome {
        try Self.validate(id: id)
        // One key for the record, its revision tree and the rewrite (the same bytes for all three
        // tables), on the stack.
        return try StoreLayout.withDocumentKey(collection.number, id) { key in
            try writeRevision(
                context, collection, id, key: key, body: body, deleting: deleting, base: base, control: control, precomputed: precomputed)
        }
    }

    /// ``writeRevision(_:_:_:body:deleting:base:control:precomputed:)`` with the document's key at hand.
    private func writeRevision(
        _ context: WriteContext, _ collection: CollectionSpec, _ id: String, key: UnsafeRawBufferPointer,
        body: [UInt8], deleting: Bool, base: String?, control: ConcurrencyControl,
        precomputed: (StoredRevisionID?) -> StoredRevisionID?
    ) throws -> WriteOutcome {
        // The old body is copied out of the map only for indexes, which compute the entries to
        // remove from it; a history with branches reads the record again below.
        let indexed = try maintainsIndexes(context)
        let existing = try currentRecord(context, collection, id, key: key, body: indexed)
        if control == .failOnConflict, let existing {
            // A new document (no base) may replace a tombstone; anything else must match exactly.
            let matches = base == existing.revisionID || (base == nil && existing.isDeleted && !deleting)
            if !matches { return .conflict }
        }
        if deleting {
            guard let existing else {
                throw CouchetteError(.notFound, "document '\(id)' not found in \(collection.fullName)")
            }
            if existing.isDeleted { return .saved(revision: existing.revision, sequence: existing.sequence) }
        }

        // The revision computed before the commit for the document as found, if any: a new
        // document's first one, or an update's of the revision it was read at.
        let revision =
            try (deleting ? nil : precomputed(existing?.revision))
            ?? RevisionID.makeStored(storedParent: existing?.revision, deleted: deleting, body: body)
        let sequence = try context.nextSequence(collection)
        guard let existing else {
            // A new document: its whole history is this revision, which the record says alone (no
            // `revisions` entry, see revisionTree), so no tree is built.
            let record = DocumentRecord(isDeleted: false, sequence: sequence, expiration: 0, revision: revision, body: body)
            try replaceCurrent(context, collection, id, old: nil, new: record, key: key)
            context.recordChange(collection, id, replacing: nil)
            return .saved(revision: revision, sequence: sequence)
        }
        if let chain = try appendedChain(
            context.txn, key, existing: existing, revision: revision, deleting: deleting, sequence: sequence)
        {
            // A history without branches gains one node at its end: written without decoding it.
            // Its only leaf, the new revision, is the winner (what commitTree would find).
            if chain.replacing {
                try chain.bytes.withUnsafeBytes { try context.txn.putNear(tables.revisions, key: key, value: $0) }
            } else {
                try chain.bytes.withUnsafeBytes { try context.txn.put(tables.revisions, key: key, value: $0) }  // a new key may append
            }
            let record = DocumentRecord(
                isDeleted: deleting, sequence: sequence, expiration: deleting ? 0 : existing.expiration,
                revision: revision, body: deleting ? [] : body)
            try replaceCurrent(context, collection, id, old: existing, new: record, key: key)
            context.recordChange(collection, id, replacing: existing.sequence)
            return .saved(revision: revision, sequence: sequence)
        }
        // Nothing was written yet: the record is read again with its body, which a branch may keep.
        let current = indexed ? existing : try currentRecord(context, collection, id, key: key) ?? existing
        var tree = try revisionTree(context.txn, collection, id, current: current)
        tree.add(
            revision.text, parent: current.revisionID, isDeleted: deleting, sequence: sequence, body: deleting ? nil : body,
            keeping: historyLimit)
        try commitTree(&tree, context, collection, id, replacing: current, sequence: sequence)
        return .saved(revision: revision, sequence: sequence)
    }

    /// The stored revision tree of the document whose current record is `existing`, with the
    /// new revision appended as its child, when the history is one chain of packed ids (see
    /// ``RevisionTree/appendingToChain(_:current:child:keeping:)``), and whether it replaces a
    /// stored tree; else nil.
    private func appendedChain(
        _ txn: WriteTransaction, _ treeKey: UnsafeRawBufferPointer, existing: DocumentRecord,
        revision: StoredRevisionID, deleting: Bool, sequence: UInt64
    ) throws -> (bytes: [UInt8], replacing: Bool)? {
        guard case .packed(let generation, let words) = existing.revision, case .packed(let childGeneration, let childWords) = revision
        else { return nil }
        let stored = try txn.getNear(tables.revisions, key: treeKey)
        let chain = try RevisionTree.appendingToChain(
            stored,
            current: .init(
                generation: generation, digest: words, sequence: existing.sequence, isDeleted: existing.isDeleted),
            child: .init(generation: childGeneration, digest: childWords, sequence: sequence, isDeleted: deleting),
            keeping: historyLimit)
        return chain.map { ($0, stored != nil) }
    }

    /// Grafts a replicated revision; an already known revision is a no-op (`.done`).
    private func graft(_ context: WriteContext, _ collection: CollectionSpec, _ revision: GraftedRevision) throws -> WriteOutcome {
        try Self.validate(id: revision.id)
        let existing = try currentRecord(context, collection, revision.id)
        var tree = try existing.map { try revisionTree(context.txn, collection, revision.id, current: $0) } ?? RevisionTree()
        guard tree.index(of: revision.revisionID) == nil else { return .done }
        let sequence = try context.nextSequence(collection)
        _ = try tree.graft(
            history: revision.history, isDeleted: revision.isDeleted, sequence: sequence, body: revision.body,
            keeping: historyLimit)
        try commitTree(&tree, context, collection, revision.id, replacing: existing, sequence: sequence)
        return .saved(revisionID: revision.revisionID, sequence: sequence)
    }

    /// Closes the losing branches of a conflict with tombstones and writes the resolution.
    private func resolve(_ context: WriteContext, _ collection: CollectionSpec, _ resolution: ConflictResolution) throws -> WriteOutcome {
        guard let existing = try currentRecord(context, collection, resolution.id) else { return .conflict }
        var tree = try revisionTree(context.txn, collection, resolution.id, current: existing)
        let live = tree.liveLeaves
        guard Set(live.map(\.revisionID)) == resolution.liveLeaves else { return .conflict }
        let sequence = try context.nextSequence(collection)
        for leaf in live where leaf.revisionID != resolution.keep {
            // Deterministic: two peers closing the same branch write the same tombstone id.
            let tombstone = try RevisionID.make(parent: leaf.revisionID, deleted: true, body: Document.emptyBody)
            tree.add(tombstone, parent: leaf.revisionID, isDeleted: true, sequence: sequence, keeping: historyLimit)
        }
        var written = resolution.keep ?? existing.revisionID
        if let keep = resolution.keep, let body = resolution.body {
            written = try RevisionID.make(parent: keep, deleted: false, body: body)
            tree.add(written, parent: keep, isDeleted: false, sequence: sequence, body: body, keeping: historyLimit)
        }
        try commitTree(&tree, context, collection, resolution.id, replacing: existing, sequence: sequence)
        return .saved(revisionID: written, sequence: sequence)
    }

    /// Saves `tree` and makes its winner the document's current record under `sequence`.
    ///
    /// The winner's body lives in the record, every other live leaf keeps its own body in the
    /// tree: so when the winner changes, the old winner's body moves into the tree.
    private func commitTree(
        _ tree: inout RevisionTree, _ context: WriteContext, _ collection: CollectionSpec, _ id: String,
        replacing existing: DocumentRecord?, sequence: UInt64
    ) throws {
        guard let winner = tree.winner, let winnerIndex = tree.index(of: winner.revisionID) else {
            throw CouchetteError(.corruption, "document '\(id)' in \(collection.fullName) has an empty revision tree")
        }
        var body: [UInt8] = []
        if !winner.isDeleted {
            if let stored = winner.body {
                body = stored
            } else if let existing, existing.revisionID == winner.revisionID {
                body = existing.body
            } else {
                throw CouchetteError(.corruption, "revision \(winner.revisionID) of '\(id)' has no body")
            }
        }
        if let existing, existing.revisionID != winner.revisionID, !existing.isDeleted,
            let old = tree.index(of: existing.revisionID), tree.isLeaf(old)
        {
            tree.setBody(existing.body, at: old)
        }
        tree.setBody(nil, at: winnerIndex)
        let record = DocumentRecord(
            isDeleted: winner.isDeleted, sequence: sequence,
            expiration: winner.isDeleted ? 0 : existing?.expiration ?? 0,
            revisionID: winner.revisionID, body: body)
        // One key, built on the stack, for both the revision tree and the record.
        try StoreLayout.withDocumentKey(collection.number, id) { key in
            if Self.isSoleRevision(tree, sequence: sequence) {
                if existing != nil { try context.txn.delete(tables.revisions, key: key) }
            } else {
                try tree.encoded().withUnsafeBytes { try context.txn.put(tables.revisions, key: key, value: $0) }
            }
            try replaceCurrent(context, collection, id, old: existing, new: record, key: key)
        }
        context.recordChange(collection, id, replacing: existing?.sequence)
    }

    /// THE place that writes or removes a document's current record: the `documents` entry, its
    /// sequence index entry (``SequenceIndex``), its expiration entry and the live count change together here. Every
    /// write path (local saves and deletes, replicated grafts, conflict resolutions, purges,
    /// expirations) goes through it, and so does index maintenance.
    ///
    /// `key` is the document's key (``StoreLayout/documentKey(_:_:)``) when the caller has it already.
    func replaceCurrent(
        _ context: WriteContext, _ collection: CollectionSpec, _ id: String, old: DocumentRecord?, new: DocumentRecord?
    ) throws {
        try StoreLayout.withDocumentKey(collection.number, id) { try replaceCurrent(context, collection, id, old: old, new: new, key: $0) }
    }

    /// ``replaceCurrent(_:_:_:old:new:)`` with the document's key (``StoreLayout/withDocumentKey(_:_:_:)``) at hand.
    private func replaceCurrent(
        _ context: WriteContext, _ collection: CollectionSpec, _ id: String,
        old: DocumentRecord?, new: DocumentRecord?, key: UnsafeRawBufferPointer
    ) throws {
        let txn = context.txn
        // The old sequence entry out and the new one in, together: one rewrite of the collection's
        // sequence tail when both are there (see ``SequenceIndex``).
        let removed = old.flatMap { $0.sequence != new?.sequence ? $0.sequence : nil }
        let added = new.flatMap { $0.sequence != old?.sequence || $0.isDeleted != old?.isDeleted ? $0.sequence : nil }
        if removed != nil || added != nil {
            var id = id
            try id.withUTF8 { id in
                try sequenceIndex.replace(
                    context, collection.number, removing: removed, adding: added, isDeleted: new?.isDeleted ?? false,
                    id: UnsafeRawBufferPointer(id))
            }
        }
        if let old {
            if old.expiration != 0 && old.expiration != new?.expiration {
                try txn.delete(tables.expirations, key: StoreLayout.expirationKey(old.expiration, collection.number, id))
            }
        }
        // Without any index (asked once per context), no index is asked to look at the records.
        if try maintainsIndexes(context) { try indexes.update(txn, collection, id, old: old, new: new) }
        guard let new else {
            try txn.delete(tables.documents, key: key)
            if let old, !old.isDeleted { context.adjustCount(collection, by: -1) }
            return
        }
        if new.expiration != 0 && new.expiration != old?.expiration {
            try txn.put(tables.expirations, key: StoreLayout.expirationKey(new.expiration, collection.number, id), value: [])
        }
        let layout = new.layout
        if old != nil {
            // An update of a stored key: through the cursor that read it, no search and no append.
            try txn.replaceNear(tables.documents, key: key, count: layout.size) { new.encode(layout, into: $0) }
        } else {
            // A new key, usually after every stored one (ids made in order): appended through the
            // kept appending cursor, which a group commit's next new document finds on the last
            // page; any other key gets an ordinary put, as ``WriteTransaction/put(_:key:count:replacing:writing:)`` would.
            try txn.appendNear(tables.documents, key: key, count: layout.size) { new.encode(layout, into: $0) }
        }
        let wasLive = old.map { !$0.isDeleted } ?? false
        if wasLive != !new.isDeleted { context.adjustCount(collection, by: new.isDeleted ? -1 : 1) }
    }

    /// Removes every trace of a document.
    private func purge(_ context: WriteContext, _ collection: CollectionSpec, _ id: String, _ record: DocumentRecord) throws {
        try StoreLayout.withDocumentKey(collection.number, id) { key in
            try context.txn.delete(tables.revisions, key: key)
            try replaceCurrent(context, collection, id, old: record, new: nil, key: key)
        }
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
            context.recordPurge(collection, id, replacing: record.sequence)
            context.countPurge(collection)
        }
    }

    // MARK: - Format and collections

    /// The storage format version of this file, or nil for a file never opened before.
    func formatVersion(_ txn: ReadTransaction) throws -> UInt32? {
        try txn.get(tables.meta, key: StoreLayout.formatKey).flatMap(StoreLayout.decodeUInt32)
    }

    /// Lays out a new file: its UUID, format version and the default collection.
    func initializeFormat(_ txn: WriteTransaction, uuid: String) throws {
        try txn.put(tables.meta, key: StoreLayout.uuidKey, value: Array(uuid.utf8))
        try txn.put(tables.meta, key: StoreLayout.formatKey, value: StoreLayout.encodeUInt32(StoreLayout.formatVersion))
        try txn.put(
            tables.meta, key: StoreLayout.collectionKey(scope: Catalog.defaultName, name: Catalog.defaultName),
            value: StoreLayout.encodeUInt32(StoreLayout.defaultCollectionNumber))
        try txn.put(tables.meta, key: StoreLayout.nextCollectionKey, value: StoreLayout.encodeUInt32(1))
        try advanceCatalogGeneration(txn)
    }

    /// Brings a file of an older format to ``StoreLayout/formatVersion``: format 1 kept the
    /// per-collection counters in `meta`, format 2 in the main database; format 3 adds the catalog
    /// generation; format 4 the sequence tails (``SequenceIndex``), which need nothing written: a
    /// collection without one has an empty tail, its whole index in the `sequences` table. Throws
    /// `.corruption` for a format it does not know.
    func upgradeFormat(_ txn: WriteTransaction, from version: UInt32) throws {
        guard (1...3).contains(version) else {
            throw CouchetteError(.corruption, "storage format \(version) cannot be upgraded to \(StoreLayout.formatVersion)")
        }
        if version == 1 { try moveCounters(txn, from: tables.meta, to: tables.counters) }
        if version < 3 { try advanceCatalogGeneration(txn) }
        try txn.put(tables.meta, key: StoreLayout.formatKey, value: StoreLayout.encodeUInt32(StoreLayout.formatVersion))
    }

    /// Moves every collection's counters (last sequence, live count) from one table to another.
    func moveCounters(_ txn: WriteTransaction, from source: Table, to destination: Table) throws {
        for prefix in [StoreLayout.sequenceCounterPrefix, StoreLayout.countPrefix] {
            var counters: [([UInt8], [UInt8])] = []
            try txn.scan(source, prefix: prefix) { key, value in
                counters.append((Array(key), Array(value)))
                return true
            }
            for (key, value) in counters {
                try txn.put(destination, key: key, value: value)
                try txn.delete(source, key: key)
            }
        }
    }

    /// The database's UUID (32 hex digits), nil when a database created before replication has none yet.
    func uuid(_ txn: ReadTransaction) throws -> String? {
        try txn.getBytes(tables.meta, key: StoreLayout.uuidKey).map { String(decoding: $0, as: UTF8.self) }
    }

    /// Stores `uuid` unless the database already has one.
    func setUUIDIfMissing(_ txn: WriteTransaction, _ uuid: String) throws {
        if try txn.get(tables.meta, key: StoreLayout.uuidKey) == nil {
            try txn.put(tables.meta, key: StoreLayout.uuidKey, value: Array(uuid.utf8))
        }
    }

    /// The collection `scope.name` as this transaction sees it, or nil.
    func collection(_ txn: ReadTransaction, scope: String, name: String) throws -> CollectionSpec? {
        let number = StoreLayout.decodeUInt32(try txn.get(tables.meta, key: StoreLayout.collectionKey(scope: scope, name: name)))
        return number.map { CollectionSpec(scope: scope, name: name, number: $0) }
    }

    /// The collection `scope.name`, numbered and stored now if it does not exist yet.
    func createCollection(_ txn: WriteTransaction, scope: String, name: String) throws -> CollectionSpec {
        if let existing = try collection(txn, scope: scope, name: name) { return existing }
        let number = StoreLayout.decodeUInt32(try txn.get(tables.meta, key: StoreLayout.nextCollectionKey)) ?? 1
        try txn.put(tables.meta, key: StoreLayout.nextCollectionKey, value: StoreLayout.encodeUInt32(number + 1))
        try txn.put(tables.meta, key: StoreLayout.collectionKey(scope: scope, name: name), value: StoreLayout.encodeUInt32(number))
        try advanceCatalogGeneration(txn)
        return CollectionSpec(scope: scope, name: name, number: number)
    }

    /// Deletes the collection `scope.name` if it exists, resolved inside `txn`: a cached number
    /// may belong to an incarnation another instance already deleted, and the name to a newer one.
    func deleteCollection(_ txn: WriteTransaction, scope: String, name: String) throws {
        guard let collection = try collection(txn, scope: scope, name: name) else { return }
        try dropCollection(txn, collection)
    }

    /// Removes every document, revision, sequence, expiration and index of a collection, and its counters.
    private func dropCollection(_ txn: WriteTransaction, _ collection: CollectionSpec) throws {
        try indexes.dropCollection(txn, collection)
        let prefix = StoreLayout.collectionPrefix(collection.number)
        var expirations: [[UInt8]] = []
        try txn.scan(tables.documents, prefix: prefix) { key, value in
            let record = try DocumentRecord(decoding: value)
            if record.expiration != 0 {
                expirations.append(
                    StoreLayout.expirationKey(
                        record.expiration, collection.number,
                        String(decoding: key[4...], as: UTF8.self)))
            }
            return true
        }
        for key in expirations { try txn.delete(tables.expirations, key: key) }
        try txn.deleteAll(tables.documents, prefix: prefix)
        try txn.deleteAll(tables.revisions, prefix: prefix)
        try sequenceIndex.removeAll(txn, collection.number)
        try txn.deleteAll(tables.meta, prefix: StoreLayout.localDocumentPrefix(collection.number))
        try txn.delete(tables.counters, key: StoreLayout.countKey(collection.number))
        try txn.delete(tables.counters, key: StoreLayout.sequenceCounterKey(collection.number))
        try txn.delete(tables.meta, key: StoreLayout.collectionKey(scope: collection.scope, name: collection.name))
        try advanceCatalogGeneration(txn)
    }
}
