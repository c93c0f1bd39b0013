import Dispatch
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
/// it is full, so that thread works while the caller encodes the next documents; the last,
/// partial chunk is hashed by the caller when the batch closes (a batch of a few updates never
/// pays for a hand-off).
final class UpdateRevisions: Sendable {
    /// Updates per job: some dozens of bodies, so a hand-off costs little beside the hashing.
    static let chunkCount = 64

    /// The entry of each operation of the batch (`-1`: none), up to the last one with an entry.
    private let entries: [Int32]
    private let chunks: [UpdateRevisionChunk]

    fileprivate init(entries: [Int32], chunks: [UpdateRevisionChunk]) {
        self.entries = entries
        self.chunks = chunks
    }

    /// The revision operation `index` gives a document found at `parent`, when it was computed
    /// for that parent; nil otherwise (the writer then computes it). Waits for the chunk's hashing.
    func revision(ofOperation index: Int, replacing parent: StoredRevisionID) -> StoredRevisionID? {
        guard covers(operation: index) else { return nil }
        let entry = Int(entries[index])
        return chunks[entry / Self.chunkCount].revision(at: entry % Self.chunkCount, replacing: parent)
    }

    /// Whether operation `index` is an update with a revision computed here.
    func covers(operation index: Int) -> Bool { index < entries.count && entries[index] >= 0 }

    /// Collects a batch's updates on the caller's side (not `Sendable`: one batch body fills it).
    struct Builder {
        private var entries: [Int32] = []
        private var chunks: [UpdateRevisionChunk] = []
        /// The updates of the chunk being filled.
        private var pending: [UpdateRevisionChunk.Update] = []
        /// Set when the batch is abandoned: chunks still queued are skipped.
        private let cancelled = CancelFlag()

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
        func cancel() { cancelled.set() }

        private mutating func startChunk(inline: Bool) {
            let chunk = UpdateRevisionChunk(pending)
            pending = []
            chunks.append(chunk)
            if inline {
                chunk.compute()
            } else {
                chunk.group.enter()
                let cancelled = self.cancelled
                BodyDigester.queue.async {
                    if !cancelled.isSet { chunk.compute() }
                    chunk.group.leave()
                }
            }
        }
    }
}

/// A flag the digest thread reads and the caller's side sets.
private final class CancelFlag: Sendable {
    private let value = Atomic<Bool>(false)
    var isSet: Bool { value.load(ordering: .acquiring) }
    func set() { value.store(true, ordering: .releasing) }
}

/// Some dozens of updates of one batch, hashed together (see ``UpdateRevisions``).
final class UpdateRevisionChunk {
    /// Entered while the chunk waits for, or runs on, the digest thread.
    let group = DispatchGroup()
    /// The revision each update was read at, and its new body.
    struct Update {
        var parent: StoredRevisionID
        var body: [UInt8]
    }
    private var updates: [Update]
    /// One revision per update once ``compute()`` ran (nil for one that cannot be made: a parent
    /// at the highest generation, which the writer then reports). Empty when skipped.
    private var revisions: [StoredRevisionID?] = []

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

    /// The revision of update `position` when it was computed for `parent`; waits for the hashing.
    func revision(at position: Int, replacing parent: StoredRevisionID) -> StoredRevisionID? {
        group.wait()
        guard position < revisions.count, updates[position].parent == parent else { return nil }
        return revisions[position]
    }
}

// @unchecked: `revisions` and `updates` (its bodies only) are written once, by whichever
// thread runs `compute` — the digest queue (between `group.enter()` on the caller's side and
// `group.leave()`), or the caller before the batch is handed over — and read only by the writer
// after `group.wait()`: the dispatch group orders the queue's writes before that read, and the
// write queue's lock orders the caller's. A skipped chunk leaves `revisions` empty, which reads as
// "not computed".
extension UpdateRevisionChunk: @unchecked Sendable {}
