import Dispatch

/// Computes the generation-1 revision digests of a run of JSON documents on a second thread,
/// while the caller transcodes the next documents: MD5 was a third of a bulk save's time.
///
/// The builder hands over finished bodies a chunk at a time (``chunkBytes`` of them, in a
/// ``BodyBuffer`` that never moves); one process-wide serial queue hashes the chunks in order. The
/// writer waits for them (``digests()``) before it writes the documents, by which time they are
/// normally done. Bounded: at most ``maximumQueuedChunks`` chunks of one digester wait in the
/// queue; past that the caller hashes a chunk itself. A batch abandoned by its body's error is
/// ``cancel()``led: queued chunks are skipped. A document whose JSON failed never reaches the
/// buffer, so no chunk holds it.
final class BodyDigester: Sendable {
    /// The one thread that hashes bodies, for every database of the process (the updates of a
    /// batch too: ``UpdateRevisions``).
    static let queue = DispatchQueue(label: "couchette.body-digests")
    /// Bodies hashed per job: a few dozen documents, so a job's hand-off costs little beside it.
    static let chunkBytes = 32 << 10
    /// Chunks of one digester in the queue at most: 2 MiB of bodies.
    static let maximumQueuedChunks = 64

    private struct State {
        var queued = 0
        var isCancelled = false
    }

    private let group = DispatchGroup()
    private let state = Locked(State())

    /// Hashes `chunk`'s bodies in `buffer`: on the digest thread, or now when too many chunks
    /// wait already (or when `inline`: a batch too small to be worth the hand-off).
    func hash(_ chunk: DigestChunk, in buffer: BodyBuffer, inline: Bool = false) {
        let queued =
            !inline
            && state.withLock { state in
                guard state.queued < Self.maximumQueuedChunks else { return false }
                state.queued += 1
                return true
            }
        guard queued else { return chunk.compute(in: buffer) }
        let state = self.state
        Self.queue.async(group: group) {
            let skip = state.withLock { state in
                state.queued -= 1
                return state.isCancelled
            }
            if !skip { chunk.compute(in: buffer) }
        }
    }

    /// Has `pages` of `buffer` mapped ahead of the caller's writes: on another thread than the
    /// digests, which may be some chunks behind (the mapping must come before the caller).
    func prepare(_ pages: Range<Int>, of buffer: BodyBuffer) {
        DispatchQueue.global().async { buffer.populate(pages) }
    }

    /// Skips the chunks still queued: their batch will not be written.
    func cancel() {
        state.withLock { $0.isCancelled = true }
    }

    /// Waits until every chunk handed over is hashed (on the writer's thread, which would need the
    /// digests next). Throws when the digester was cancelled, so a skipped chunk's missing digests
    /// can never be written.
    func waitForChunks() throws {
        group.wait()
        guard !state.withLock({ $0.isCancelled }) else {
            throw CouchetteError(.invalidParameter, "a batch whose body failed cannot be written")
        }
    }
}

/// The digests of a few dozen consecutive bodies of a ``BodyBuffer``: the unit of work of
/// ``BodyDigester``.
final class DigestChunk {
    /// Where the first body starts, and where each body ends, in the buffer.
    let start: Int
    let ends: [Int]
    /// One digest per body, filled in once by ``compute(in:)``.
    private(set) var digests: [(UInt64, UInt64)] = []

    init(start: Int, ends: [Int]) {
        self.start = start
        self.ends = ends
    }

    /// Hashes every body of the chunk: MD5 over the deleted flag, an empty parent and the body,
    /// the id of generation 1 (see ``RevisionID/newDocumentDigest(body:)``).
    func compute(in buffer: BodyBuffer) {
        var digests: [(UInt64, UInt64)] = []
        digests.reserveCapacity(ends.count)
        var start = self.start
        for end in ends {
            digests.append(RevisionID.newDocumentDigest(body: buffer.bytes(start..<end)))
            start = end
        }
        self.digests = digests
    }
}

// @unchecked: `digests` is written once, by the one thread that runs `compute` (the digest queue,
// or the caller before it hands the batch over), and read only by the writer after
// `BodyDigester.waitForChunks()` — the dispatch group orders the job's write before that read, and
// the write queue's lock orders the caller's — and, for the objects a batch tracks, by the caller
// once that commit completed (`PendingWrite`'s lock orders the writer's wait before it). `start`
// and `ends` never change.
extension DigestChunk: @unchecked Sendable {}
