import Dispatch

/// Computes revision digests on a second thread while the caller goes on: the generation-1
/// digests of a run of JSON documents while the caller transcodes the next ones (MD5 was a third
/// of a bulk save's time), and the new revisions of a batch's updates (``UpdateRevisions``).
///
/// Work goes over a chunk at a time (``chunkBytes`` of bodies, in a ``BodyBuffer`` that never
/// moves, or some dozens of updates); one process-wide serial queue runs the chunks in order. The
/// writer waits for them (``waitForChunks()``, ``DigestJob/wait()``) before it writes the
/// documents, by which time they are normally done. Bounded: at most ``maximumQueuedChunks``
/// chunks of one digester wait in the queue; past that the caller computes a chunk itself. And
/// the writer never waits behind other work on the shared queue (other batches, other
/// databases): a chunk the queue has not started yet when the writer needs it is computed by the
/// writer, and the queue skips it. A batch abandoned by its body's error is ``cancel()``led:
/// queued chunks are skipped. A document whose JSON failed never reaches the buffer, so no chunk
/// holds it.
final class BodyDigester: Sendable {
    /// The one thread that computes digests, for every database of the process.
    static let queue = DispatchQueue(label: "couchette.body-digests")
    /// Bodies hashed per job: a few dozen documents, so a job's hand-off costs little beside it.
    static let chunkBytes = 32 << 10
    /// Chunks of one digester in the queue at most: 2 MiB of bodies.
    static let maximumQueuedChunks = 64

    private struct State {
        var queued = 0
        var isCancelled = false
        /// Every chunk handed to the queue, in order (for ``waitForChunks()``).
        var jobs: [DigestJob] = []
    }

    private let state = Locked(State())

    /// Runs `work` on the digest thread, or now when too many chunks wait already (or when
    /// `inline`: a batch too small to be worth the hand-off). Returns the job to wait for, nil when
    /// `work` ran here.
    @discardableResult
    func run(inline: Bool = false, _ work: @escaping @Sendable () -> Void) -> DigestJob? {
        let job = DigestJob(work)
        let queued =
            !inline
            && state.withLock { state in
                guard state.queued < Self.maximumQueuedChunks else { return false }
                state.queued += 1
                state.jobs.append(job)
                return true
            }
        guard queued else {
            job.finish(running: true)
            return nil
        }
        let state = self.state
        Self.queue.async {
            let skip = state.withLock { state in
                state.queued -= 1
                return state.isCancelled
            }
            job.finish(running: !skip)
        }
        return job
    }

    /// Hashes `chunk`'s bodies in `buffer` (see ``run(inline:_:)``).
    func hash(_ chunk: DigestChunk, in buffer: BodyBuffer, inline: Bool = false) {
        run(inline: inline) { chunk.compute(in: buffer) }
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

    /// Returns once every chunk handed over is computed (on the writer's thread, which would need
    /// the digests next), computing those the queue has not started. Throws when the digester was
    /// cancelled, so a skipped chunk's missing digests can never be written.
    func waitForChunks() throws {
        let (jobs, isCancelled) = state.withLock { ($0.jobs, $0.isCancelled) }
        if !isCancelled {
            for job in jobs { job.wait() }
        }
        guard !state.withLock({ $0.isCancelled }) else {
            throw CouchetteError(.invalidParameter, "a batch whose body failed cannot be written")
        }
    }
}

/// A chunk of work handed to the digest thread, run by whoever gets to it first: the digest
/// thread, or a thread that needs its result before the queue reached it (``wait()``), which then
/// never waits behind the work queued before it.
final class DigestJob: Sendable {
    /// The work until someone takes it to run (or skip) it.
    private let work: Locked<(@Sendable () -> Void)?>
    /// Entered until the work has run or been skipped.
    private let done = DispatchGroup()

    init(_ work: @escaping @Sendable () -> Void) {
        self.work = Locked(work)
        done.enter()
    }

    /// Runs the work (or, not `running`, drops it) unless another thread took it first.
    func finish(running: Bool) {
        let taken = work.withLock { work in
            defer { work = nil }
            return work
        }
        guard let taken else { return }
        if running { taken() }
        done.leave()
    }

    /// Returns once the work has run or been skipped: runs it now when nobody has started it,
    /// else waits for the thread running it (this job's work, nothing else).
    func wait() {
        finish(running: true)
        done.wait()
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

// @unchecked: `digests` is written once, by the one thread that runs `compute` (whoever takes its
// `DigestJob`: the digest queue, the writer in `BodyDigester.waitForChunks()`, or the caller before
// it hands the batch over), and read only by the writer after `waitForChunks()` — the job's
// dispatch group orders the queue's write before that read, and the write queue's lock orders the
// caller's — and, for the objects a batch tracks, by the caller
// once that commit completed (`PendingWrite`'s lock orders the writer's wait before it). `start`
// and `ends` never change.
extension DigestChunk: @unchecked Sendable {}
