import Foundation

/// The writes waiting for a commit, and who commits them.
///
/// Callers append from any thread. One committer at a time takes what is queued and commits it
/// as one group:
/// - A caller that finds nobody committing, no write queued and no sign of concurrency (the last
///   commit carried one write and none arrived while it ran) commits its write itself, on its
///   own thread (``Admission/commitHere``), if no other transaction holds the write lock
///   (``StorageEnvironment/ifWriterIsFree(_:)``; else the writer thread waits for it, off the
///   cooperative pool). A lone saver then makes no thread hand-off at all: the
///   writer thread would cost two (waking the writer, then the caller's pool thread), about 50 µs
///   a save on a quiet machine and milliseconds under load, when a woken thread waits for a core.
/// - Otherwise the writer thread commits (``wakeWriter``): it may wait for writers on their way
///   (``GroupCommitPacing``) without holding up one of Swift's few cooperative threads, and it
///   keeps committing while writes keep arriving (``writerMayStop()``). A caller that committed on
///   its own thread hands the writes queued meanwhile to it (``handOff()``).
///
/// The writer may block for a moment (``take(atLeast:waitingAtMost:)``) so that writers known to
/// be on their way join the same commit: appending wakes it as soon as enough writes are there,
/// so the wait ends with the last straggler rather than at a polling tick.
final class WriteQueue: @unchecked Sendable {
    // @unchecked: every stored property is only touched while `condition` is locked. For the
    // same reason their accesses need no runtime exclusivity checks (`@exclusivity(unchecked)`):
    // the lock already makes them exclusive, and every commit makes several.
    private let condition = NSCondition()
    @exclusivity(unchecked) private var writes: [PendingWrite] = []
    /// How many queued writes end the writer's wait (`Int.max`: nobody waits).
    @exclusivity(unchecked) private var wanted = Int.max
    @exclusivity(unchecked) private var committer = Committer.nobody
    /// Callers between ``append(_:mayCommitHere:)`` with `mayCommitHere` and ``leave()``.
    @exclusivity(unchecked) private var callersInFlight = 0
    @exclusivity(unchecked) private var pacing: GroupCommitPacing
    /// When the last commit ended (recorded by ``committed(_:startedAt:endedAt:)``).
    @exclusivity(unchecked) private var lastCommitEnd = ContinuousClock.now
    /// When a caller committing on its own thread yields (see ``handOff()``).
    @exclusivity(unchecked) private var ownCommitTurns = OwnCommitTurns()
    @exclusivity(unchecked) private var wakeWriter: (@Sendable () -> Void)?

    /// Who commits the queued writes.
    private enum Committer {
        case nobody
        /// A caller, on its own thread; what it did not take goes to the writer (``handOff()``).
        case caller
        /// The writer thread, asked through ``wakeWriter``.
        case writer
    }

    /// What a caller that queued a write does next.
    enum Admission: Equatable {
        /// Commit the queued writes on this thread (``Database/commitQueuedWrites()``), then
        /// ``handOff()``.
        case commitHere
        /// Wait for the write's ``PendingWrite/completion()``: a committer will take it.
        case queued
    }

    init(pacing: GroupCommitPacing = GroupCommitPacing()) {
        self.pacing = pacing
    }

    /// Sets how to ask the writer thread to commit (``Database``'s init, before any write).
    func connect(wakeWriter: @escaping @Sendable () -> Void) {
        condition.lock()
        self.wakeWriter = wakeWriter
        condition.unlock()
    }

    /// Queues `writes`. With `mayCommitHere`, a lone caller is told to commit them itself (see
    /// the type's summary); otherwise the writer thread is asked, unless a commit runs already
    /// (it takes them, or hands them on). A caller is lone when no other caller is in flight
    /// either: one counts from its `append` with `mayCommitHere` until its ``leave()``, so a task
    /// that runs while another is still on its way out of a commit queues for the writer.
    func append(_ writes: some Swift.Collection<PendingWrite>, mayCommitHere: Bool) -> Admission {
        condition.lock()
        let wasEmpty = self.writes.isEmpty
        self.writes.append(contentsOf: writes)
        if self.writes.count >= wanted { condition.signal() }
        var admission = Admission.queued
        var wake: (@Sendable () -> Void)?
        let alone = callersInFlight == 0
        if mayCommitHere { callersInFlight += 1 }
        if committer == .nobody {
            if mayCommitHere && alone && wasEmpty && pacing.expectedWriters == 1 {
                committer = .caller
                admission = .commitHere
            } else {
                committer = .writer
                wake = wakeWriter
            }
        }
        condition.unlock()
        wake?()
        return admission
    }

    /// Queues one write (see the method above), without making an array of it.
    func append(_ write: PendingWrite, mayCommitHere: Bool) -> Admission {
        append(CollectionOfOne(write), mayCommitHere: mayCommitHere)
    }

    /// Ends the flight of a caller that appended with `mayCommitHere` (its writes are finished).
    func leave() {
        condition.lock()
        callersInFlight -= 1
        condition.unlock()
    }

    /// Ends a caller's commit (``Admission/commitHere``): writes queued meanwhile go to the
    /// writer thread, since they came from other tasks (concurrency: the writer gathers groups).
    ///
    /// Returns whether the caller must yield before it goes on (see ``OwnCommitTurns``): it then
    /// stays in flight until its ``leave()``, so a saver that runs meanwhile queues for the
    /// writer. Otherwise its flight ends here, in the same lock.
    func handOff() -> Bool {
        condition.lock()
        var wake: (@Sendable () -> Void)?
        let yields: Bool
        if writes.isEmpty {
            committer = .nobody
            yields = ownCommitTurns.committed(endingAt: lastCommitEnd)
        } else {
            // Others are saving: let them run, and start a new turn afterwards.
            committer = .writer
            wake = wakeWriter
            ownCommitTurns.endTurn()
            yields = true
        }
        if !yields { callersInFlight -= 1 }
        condition.unlock()
        wake?()
        return yields
    }

    /// Called by the writer thread after each commit: true (and nobody commits from now on) when
    /// nothing is queued, false when it must commit again.
    func writerMayStop() -> Bool {
        condition.lock()
        defer { condition.unlock() }
        guard writes.isEmpty else { return false }
        committer = .nobody
        return true
    }

    /// Takes every queued write.
    func takeAll() -> [PendingWrite] {
        condition.lock()
        defer {
            writes.removeAll(keepingCapacity: true)
            condition.unlock()
        }
        return writes
    }

    /// Blocks the calling (writer) thread until `count` writes are queued or `limit` has passed,
    /// then takes what is queued (possibly nothing).
    func take(atLeast count: Int, waitingAtMost limit: Duration) -> [PendingWrite] {
        let deadline = Date(timeIntervalSinceNow: Double(limit.components.seconds) + Double(limit.components.attoseconds) / 1e18)
        condition.lock()
        wanted = count
        while writes.count < count && condition.wait(until: deadline) {}
        wanted = .max
        defer {
            writes.removeAll(keepingCapacity: true)
            condition.unlock()
        }
        return writes
    }

    // MARK: - Pacing

    /// The writers the committer of `having` writes waits for (see ``GroupCommitPacing``).
    func stragglers(having: Int) -> StragglerGathering? {
        condition.lock()
        defer { condition.unlock() }
        return pacing.stragglers(from: self, having: having)
    }

    /// Records a finished commit of `count` writes that ran from `start` to `end` (the writes
    /// queued now arrived meanwhile). Called before the commit's callers are resumed, whose next
    /// writes would otherwise count as concurrency.
    func committed(_ count: Int, startedAt start: ContinuousClock.Instant, endedAt end: ContinuousClock.Instant) {
        condition.lock()
        pacing.committed(count, arrivedMeanwhile: writes.count, took: end - start)
        lastCommitEnd = end
        condition.unlock()
    }
}
