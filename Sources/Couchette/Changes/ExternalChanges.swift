import Foundation

/// Notices commits made by other processes (or by another ``Database`` instance of this process)
/// on the same file, and publishes them through the database's commit observers.
///
/// While at least one observer is registered, a monitor compares LMDB's last transaction id (a
/// read of the meta pages through the memory map: no transaction, no lock) with the last one it
/// examined. On Linux the monitor is a thread of its own blocked on an inotify watch of the
/// database folder (see ``DirectoryWatch``): every commit, from any process, writes `data.mdb`
/// and wakes it, so an idle process does not run at all — but for one look every
/// ``safetyInterval`` (for writers inotify cannot see, such as another program mapping the file
/// writable, or a network file system). Under a stream of commits it looks at most once per
/// ``interval``. Elsewhere it is a task polling every ``interval``.
///
/// When the id moved, the monitor opens one snapshot and, for each collection, reads the
/// `sequences` table after the last sequence it has seen, skipping the entries this database's
/// own writer made (the writer records them, tagged with their transaction id, just before each
/// commit: see ``willCommit(transactionID:_:)``). The ids found form one ``CommitSummary``,
/// published from the monitor — never on, nor waiting for, the writer thread.
///
/// What is reported:
/// - saves and deletions by others, with their ids, in sequence order; several commits made
///   within one ``interval`` may arrive as one event (their ids merged);
/// - purges by others (including expiration purges) leave no sequence entry, so their ids are not
///   known: a purge is noticed because the collection's purge counter moved by more than this
///   database's own purges explain, and the collection is then reported as changed beyond the ids
///   listed (``CommitSummary/touch(_:)``) — live queries re-run whole, even when the same commits
///   also saved documents; collection and document feeds get only the saved ids, if any.
/// - Documents of a collection another process creates are reported (the catalog is read from
///   each snapshot); a collection another process deletes is not (its documents just vanish).
/// - Events for other processes' commits are ordered among themselves, but may reach a stream
///   after an event for a later commit of this process.
/// - Another ``Database`` instance of this process on the same file counts as another process.
final class ExternalChanges: TransactionObserver {
    /// The shortest time between two looks at the last transaction id while observers exist (the
    /// polling period where no file watch is available).
    static let interval = Duration.milliseconds(20)
    /// How long a file-watching monitor sleeps when nothing is written, in milliseconds: the
    /// latest it notices a commit inotify did not report, or that its last observer is gone.
    static let safetyInterval: Int32 = 1000

    private struct Cursor {
        var sequence: UInt64
        var liveCount: UInt64
        /// Purges ever made in the collection, expired documents' included.
        var purges: UInt64
    }

    private struct State {
        var isRunning = false
        /// The snapshot the cursors describe; commits up to it have been reported.
        var lastSeen: UInt64 = 0
        var cursors: [UInt32: Cursor] = [:]
        /// This database's own commits not yet covered by ``lastSeen``, by transaction id.
        var ownCommits: [UInt64: OwnWrites] = [:]
        /// While no monitor runs, the last own commit only (see ``willCommit(transactionID:_:)``):
        /// a table keyed by transaction id would be hashed into at every commit for nobody.
        var lastOwnCommit: (transactionID: UInt64, writes: OwnWrites)?
    }

    private let state = Locked(State())
    private let reader: StoreReader
    private let observers: CommitObservers

    /// A monitor of `reader`'s file that publishes through `observers`, registered with them as a
    /// ``TransactionObserver`` so that it knows this instance's own commits.
    init(reader: StoreReader, observers: CommitObservers) {
        self.reader = reader
        self.observers = observers
        observers.add(transactionObserver: self)
    }

    // MARK: - Called by the writer

    /// Records what an own commit wrote; the writer calls it inside the write transaction, just
    /// before committing, so no snapshot can contain the commit before it is recorded.
    ///
    /// While no monitor runs, only the last record is kept: the writer is serial, so older ones
    /// belong to commits that have completed, which the monitor's first snapshot will include.
    /// The last one is needed when the monitor starts while its commit is under way: the
    /// baseline snapshot misses that commit, and the first scan must know it as this instance's.
    func willCommit(transactionID: UInt64, _ writes: OwnWrites) {
        state.withLock { state in
            if state.isRunning {
                state.ownCommits[transactionID] = writes
            } else {
                state.lastOwnCommit = (transactionID, writes)
            }
        }
    }

    /// The file is about to be compacted (on the writer, with no other opener), which restarts
    /// LMDB's transaction ids. Every recorded commit has completed (the writer is serial), so the
    /// records not yet examined move under id 0, which any later snapshot includes whatever its
    /// id; and the next poll scans even if the new last id happens to equal the old one.
    /// Sequences, hence the cursors, are unchanged. Harmless if compaction then fails.
    func willCompact() {
        state.withLock { state in
            var pending = OwnWrites()
            for writes in state.ownCommits.values { pending.merge(writes) }
            if let last = state.lastOwnCommit { pending.merge(last.writes) }
            state.lastOwnCommit = nil
            state.ownCommits = [0: pending]
            if state.lastSeen != 0 { state.lastSeen = .max }
        }
    }

    /// The file was compacted: a poll between the compaction and now may have recorded an old
    /// transaction id as seen; make the next poll scan whatever the last id is.
    func didCompact() {
        state.withLock { state in
            if state.lastSeen != 0 { state.lastSeen = .max }
        }
    }

    /// The commit recorded under `transactionID` failed: its id will be reused.
    func commitFailed(transactionID: UInt64) {
        state.withLock { state in
            _ = state.ownCommits.removeValue(forKey: transactionID)
            if state.lastOwnCommit?.transactionID == transactionID { state.lastOwnCommit = nil }
        }
    }

    // MARK: - Monitoring

    /// Whether a monitor runs (it stops at its next look once the last observer is gone).
    var isMonitoring: Bool { state.withLock { $0.isRunning } }

    /// Whether every commit to the file has been examined.
    func hasCaughtUp() -> Bool {
        reader.lastTransactionID == state.withLock { $0.lastSeen }
    }

    /// Starts the monitor unless it runs; call after registering an observer.
    func ensureRunning() {
        let start = state.withLock { state -> Bool in
            guard !state.isRunning else { return false }
            state.isRunning = true
            state.cursors = [:]
            state.lastSeen = 0
            // A commit may be under way: the baseline read next may miss it.
            if let last = state.lastOwnCommit { state.ownCommits[last.transactionID] = last.writes }
            state.lastOwnCommit = nil
            return true
        }
        guard start else { return }
        #if canImport(Glibc)
        // The watch exists before the baseline is read, so a commit after the baseline wakes it.
        let watch = try? DirectoryWatch(path: reader.directoryPath)
        #endif
        // A baseline first, synchronously: commits made after the observer registered are then
        // never missed. Failures (database closed) end the monitor at its first turn.
        _ = try? reader.read { snapshot in try self.scan(snapshot, reporting: false) }
        #if canImport(Glibc)
        if let watch {
            Thread.detachNewThread { self.follow(watch) }
            return
        }
        #endif
        Task.detached { await self.run() }
    }

    /// The polling monitor, where no file watch is available.
    private func run() async {
        while true {
            try? await Task.sleep(for: Self.interval)
            guard keepsRunning() else { return }
            poll()
        }
    }

    #if canImport(Glibc)
    /// The file-watching monitor; blocks its own thread, never a Swift concurrency one.
    ///
    /// A commit writes the file twice (its pages, then its meta page): the first write wakes the
    /// monitor too early, finding nothing, and the second one right away. New snapshots start at
    /// the commit only once LMDB has also updated its lock file, just after the meta page: a scan
    /// in between reads the snapshot before, so the monitor looks again shortly, as no further
    /// write will wake it.
    private func follow(_ watch: DirectoryWatch) {
        var lastScan = ContinuousClock.now - Self.interval
        var woken = false
        while true {
            if !woken { _ = watch.wait(milliseconds: Self.safetyInterval) }
            woken = false
            // A stream of commits would otherwise make it scan for each: at most once per interval.
            let early = lastScan + Self.interval - ContinuousClock.now
            if early > .zero {
                Thread.sleep(forTimeInterval: Double(early.components.attoseconds) / 1e18 + Double(early.components.seconds))
            }
            guard keepsRunning() else { return }
            if poll() { lastScan = .now }
            var retries = 0
            while retries < 50 && !hasCaughtUp() {
                retries += 1
                // Another commit's write: the loop above takes it, at its pace.
                if watch.wait(milliseconds: 1) {
                    woken = true
                    break
                }
                poll()
            }
        }
    }
    #endif

    /// False, and the monitor marked stopped, once the last observer is gone or the database closed.
    private func keepsRunning() -> Bool {
        state.withLock { state -> Bool in
            if observers.count == 0 || !reader.isOpen {
                state.isRunning = false
                // The newest record may belong to a commit still under way (the writer is serial,
                // so older ones have completed): kept as the one-slot record, so that a monitor
                // started before that commit ends knows it as this instance's, not another
                // process's (its baseline snapshot misses it; see ``ensureRunning()``). Records
                // moved under id 0 by a compaction have all completed.
                if let newest = state.ownCommits.max(by: { $0.key < $1.key }), newest.key != 0 {
                    state.lastOwnCommit = (newest.key, newest.value)
                }
                state.ownCommits.removeAll()
                return false
            }
            return true
        }
    }

    /// Compares the last transaction id with the last one seen; reads what others wrote since.
    /// Returns whether the id had moved.
    @discardableResult
    func poll() -> Bool {
        let last = reader.lastTransactionID
        let seen = state.withLock { $0.lastSeen }
        guard last != seen else { return false }
        // No baseline yet (the first read failed): take one instead of reporting the whole file.
        let reporting = seen != 0
        guard let summary = try? reader.read({ snapshot in try scan(snapshot, reporting: reporting) }) else { return true }
        observers.publish(summary)
        return true
    }

    /// Moves every collection's cursor to the snapshot `txn`; returns what others wrote in between.
    private func scan(_ snapshot: StoreSnapshot, reporting: Bool) throws -> CommitSummary {
        let snapshotID = snapshot.transactionID
        let collections = try snapshot.collections()
        var current: [UInt32: Cursor] = [:]
        for spec in collections {
            current[spec.number] = Cursor(
                sequence: try snapshot.lastSequence(spec), liveCount: try snapshot.liveCount(spec),
                purges: try snapshot.purgeCount(spec))
        }
        // Take the cursors and the own commits included in this snapshot.
        let (previous, own) = state.withLock { state -> ([UInt32: Cursor], OwnWrites) in
            var own = OwnWrites()
            for (id, writes) in state.ownCommits where id <= snapshotID {
                own.merge(writes)
                state.ownCommits[id] = nil
            }
            defer {
                state.cursors = current
                state.lastSeen = snapshotID
            }
            return (state.cursors, own)
        }
        var summary = CommitSummary()
        guard reporting else { return summary }
        for spec in collections {
            guard let now = current[spec.number] else { continue }
            let before = previous[spec.number] ?? Cursor(sequence: 0, liveCount: 0, purges: 0)
            var named = false
            try snapshot.forEachChange(spec, after: before.sequence, through: now.sequence) { sequence, id, _ in
                if !own.contains(spec.number, sequence) {
                    summary.record(spec, id)
                    named = true
                }
                return true
            }
            // Purges by others, whatever else the same commits wrote. A writer too old to count
            // purges is still noticed by the live count when it wrote nothing else.
            let othersPurged = (now.purges &- before.purges) != (own.purges[spec.number] ?? 0)
            let unexplained = Int64(now.liveCount) - Int64(before.liveCount) - (own.countDeltas[spec.number] ?? 0)
            if othersPurged || (!named && unexplained != 0) { summary.touch(spec) }
        }
        return summary
    }
}
