import Synchronization

/// The new revisions of a batch's updates — saves of documents read at a known revision —
/// computed while the batch is still being filled, on the digest thread (``BodyDigester/queue``),
/// instead of on the writer thread during the commit: MD5 of the body was a quarter of the
/// writer's instructions per update.
///
/// Each update's revision is the MD5 over its body with the revision it was read at as parent
/// (``RevisionID/makeStored(storedParent:deleted:body:)``), exactly what the writer computes when
/// it finds the document still at that revision. The writer uses it only then; a document
/// changed or deleted since it was read gets its revision computed at the commit as before.
///
/// Updates are hashed ``chunkCount`` at a time: a chunk is handed to the digest thread as soon as
/// it is full (through a ``BodyDigester`` of the batch's own: bounded, and the writer computes a
/// chunk the digest thread has not started rather than wait behind other work), so that thread
/// works while the caller encodes the next documents; the last, partial chunk is hashed by the
/// caller when the batch closes (a batch of a few updates never pays for a hand-off).
final class UpdateRevisions: Sendable {
    /// Updates per job: some dozens of bodies, so a hand-off costs little beside the hashing.
    static let chunkCount = 64

    /// The entry of each operation of the batch (`-1`: none), up to the last one with an entry.
    private let entries: [Int32]
    private let chunks: [HashedChunk]

    /// A chunk, and the job that hashes it (nil: hashed already, by the caller).
    fileprivate struct HashedChunk: Sendable {
        let chunk: UpdateRevisionChunk
        let job: DigestJob?
    }

    fileprivate init(entries: [Int32], chunks: [HashedChunk]) {
        self.entries = entries
        self.chunks = chunks
    }

    /// The revision operation `index` gives a document found at `parent`, when it was computed
    /// for that parent; nil otherwise (the writer then computes it). Hashes the chunk now unless
    /// the digest thread has begun it already (then waits for it).
    func revision(ofOperation index: Int, replacing parent: StoredRevisionID) -> StoredRevisionID? {
        guard covers(operation: index) else { return nil }
        let entry = Int(entries[index])
        let chunkIndex = entry / Self.chunkCount
        let hashed = chunks[chunkIndex]
        // The writer asks in operation order: some dozens of updates in a row fall in one chunk,
        // whose job is waited for (a lock and a dispatch group) once.
        if readyChunk.load(ordering: .acquiring) != chunkIndex {
            hashed.job?.wait()
            readyChunk.store(chunkIndex, ordering: .releasing)
        }
        return hashed.chunk.revision(at: entry % Self.chunkCount, replacing: parent)
    }

    /// The chunk whose job was last waited for (-1: none): its revisions are there to read.
    private let readyChunk = Atomic<Int>(-1)

    /// Whether operation `index` is an update with a revision computed here.
    func covers(operation index: Int) -> Bool { index < entries.count && entries[index] >= 0 }

    /// Collects a batch's updates on the caller's side (not `Sendable`: one batch body fills it).
    struct Builder {
        private var entries: [Int32] = []
        private var chunks: [HashedChunk] = []
        /// The updates of the chunk being filled.
        private var pending: [UpdateRevisionChunk.Update] = []
        /// Hands the chunks to the digest thread (made with the first: a batch of a few updates
        /// hands none over); cancelled when the batch is abandoned.
        private var digester: BodyDigester?

        var isEmpty: Bool { chunks.isEmpty && pending.isEmpty }

        /// Adds operation `index`, the save of `body` over a document read at `parent`.
        mutating func add(operation index: Int, parent: StoredRevisionID, body: [UInt8]) {
            guard let entry = Int32(exactly: chunks.count * UpdateRevisions.chunkCount + pending.count), index >= entries.count else {
                return  // past what an entry can hold, or out of order: the writer computes it
            }
            if index > entries.count { entries.append(contentsOf: repeatElement(-1, count: index - entries.count)) }
            entries.append(entry)
            if pending.isEmpty { pending.reserveCapacity(UpdateRevisions.chunkCount) }
            pending.append(.init(parent: parent, body: body))
            if pending.count == UpdateRevisions.chunkCount { startChunk(inline: false) }
        }

        /// The finished set, with its last chunk hashed now; nil when the batch has no update.
        mutating func finished() -> UpdateRevisions? {
            if !pending.isEmpty { startChunk(inline: true) }
            guard !chunks.isEmpty else { return nil }
            return UpdateRevisions(entries: entries, chunks: chunks)
        }

        /// Skips the chunks still queued: the batch will not be written.
        func cancel() { digester?.cancel() }

        private mutating func startChunk(inline: Bool) {
            let chunk = UpdateRevisionChunk(pending)
            pending = []
            if inline {
                chunk.compute()
                chunks.append(HashedChunk(chunk: chunk, job: nil))
                return
            }
            let digester = self.digester ?? BodyDigester()
            self.digester = digester
            chunks.append(HashedChunk(chunk: chunk, job: digester.run { chunk.compute() }))
        }
    }
}

/// Some dozens of updates of one batch, hashed together (see ``UpdateRevisions``).
final class UpdateRevisionChunk {
    /// The revision each update was read at, and its new body.
    struct Update {
        var parent: StoredRevisionID
        var body: [UInt8]
    }
    /// Unchecked exclusivity (here and on ``revisions``): each is written by one thread at a time,
    /// in ``compute()``, and read only after it (see the `@unchecked Sendable` below); the
    /// runtime checks cost the writer more per update than the read they guard.
    @exclusivity(unchecked) private var updates: [Update]
    /// One revision per update once ``compute()`` ran (nil for one that cannot be made: a parent
    /// at the highest generation, which the writer then reports). Empty when skipped.
    @exclusivity(unchecked) private var revisions: [StoredRevisionID?] = []

    init(_ updates: [Update]) { self.updates = updates }

    func compute() {
        var revisions: [StoredRevisionID?] = []
        revisions.reserveCapacity(updates.count)
        for update in updates {
            revisions.append(try? RevisionID.makeStored(storedParent: update.parent, deleted: false, body: update.body))
        }
        self.revisions = revisions
        // The operations keep the bodies: no second reference to them past the hashing.
        for index in updates.indices { updates[index].body = [] }
    }

    /// The revision of update `position` when it was computed for `parent` (only once the chunk's
    /// job has ended).
    func revision(at position: Int, replacing parent: StoredRevisionID) -> StoredRevisionID? {
        guard position < revisions.count, updates[position].parent == parent else { return nil }
        return revisions[position]
    }
}

// @unchecked: `revisions` and `updates` (its bodies only) are written once, by whichever thread
// takes the chunk's `DigestJob` — the digest queue, the writer in `DigestJob.wait()`, or the
// caller before the batch is handed over — and read only by the writer after `DigestJob.wait()`:
// the job's dispatch group orders the queue's writes before that read, and the write queue's lock
// orders the caller's. A skipped chunk leaves `revisions` empty, which reads as "not computed".
extension UpdateRevisionChunk: @unchecked Sendable {}
