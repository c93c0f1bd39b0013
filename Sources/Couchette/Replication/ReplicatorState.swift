import Foundation

/// The status of one ``Replicator`` and the streams that follow it, shared by the actor and its
/// worker tasks and readable without awaiting the actor.
///
/// Status changes are yielded to subscribers inside the lock, so every stream sees them in the
/// order they happened, and a new subscriber gets the current status before any later change.
final class ReplicatorState: Sendable {
    private struct State {
        var isRunning = false
        var workers: [Int: Replicator.ActivityLevel] = [:]
        /// Workers done with their one-shot run, while others may still work.
        var finishedWorkers = 0
        var completed: UInt64 = 0
        var total: UInt64 = 0
        var error: (any Error)?
        var serverURL: URL?
        var status = Replicator.Status(activity: .stopped, progress: Replicator.Progress(completed: 0, total: 0), error: nil)
        var nextToken = 0
        var statusBuffers: [Int: ChangeBuffer<ReplicatorChange>] = [:]
        var documentBuffers: [Int: ChangeBuffer<DocumentReplication>] = [:]

        mutating func computeStatus() -> Replicator.Status {
            var activity = Replicator.ActivityLevel.stopped
            if isRunning {
                let levels = Set(workers.values)
                // No worker left while still running: the run is wrapping up, not connecting.
                activity =
                    levels.contains(.busy) || (levels.isEmpty && finishedWorkers > 0)
                    ? .busy
                    : levels.contains(.connecting) || levels.isEmpty
                        ? .connecting
                        : levels.contains(.offline)
                            ? .offline
                            : .idle
            }
            return Replicator.Status(
                activity: activity, progress: Replicator.Progress(completed: completed, total: total), error: error,
                serverURL: serverURL)
        }
    }

    private let state = Locked(State())

    var status: Replicator.Status { state.withLock { $0.status } }

    /// Applies `change` and tells the subscribers when the status it shows changed.
    private func update(_ replicator: Replicator, _ change: (inout State) -> Void) {
        state.withLock { state in
            change(&state)
            let new = state.computeStatus()
            let old = state.status
            guard
                new.activity != old.activity || new.progress != old.progress
                    || (new.error == nil) != (old.error == nil) || new.serverURL != old.serverURL
            else { return }
            state.status = new
            let event = ReplicatorChange(replicator: replicator, status: new)
            for buffer in state.statusBuffers.values { buffer.yield(event) }
        }
    }

    func begin(_ replicator: Replicator) {
        update(replicator) { state in
            state.isRunning = true
            state.workers = [:]
            state.finishedWorkers = 0
            state.error = nil
            state.serverURL = nil
            state.completed = 0
            state.total = 0
        }
    }

    func end(_ replicator: Replicator, error: (any Error)?) {
        update(replicator) { state in
            state.isRunning = false
            state.workers = [:]
            state.error = error
        }
    }

    /// A worker's activity; `error` is the transient failure it is waiting out (nil clears it).
    func setActivity(_ replicator: Replicator, worker: Int, _ activity: Replicator.ActivityLevel, error: (any Error)? = nil) {
        update(replicator) { state in
            state.workers[worker] = activity
            if activity == .offline { state.error = error } else if activity == .busy || activity == .idle { state.error = nil }
        }
    }

    /// The server of a ``URLEndpoint`` that answered last (see ``ServerSelection``).
    func setServerURL(_ replicator: Replicator, _ url: URL) {
        update(replicator) { $0.serverURL = url }
    }

    func workerFinished(_ replicator: Replicator, worker: Int) {
        update(replicator) { state in
            state.workers[worker] = nil
            state.finishedWorkers += 1
        }
    }

    func addProgress(_ replicator: Replicator, completed: Int, total: Int) {
        update(replicator) { state in
            state.completed += UInt64(completed)
            state.total += UInt64(total)
        }
    }

    func publish(_ replication: DocumentReplication) {
        state.withLock { state in
            for buffer in state.documentBuffers.values { buffer.yield(replication) }
        }
    }

    // MARK: - Streams

    func statusStream(_ replicator: Replicator) -> ChangeStream<ReplicatorChange> {
        let buffer = ChangeBuffer<ReplicatorChange> { queued, newer in queued = newer }
        let token = state.withLock { state -> Int in
            state.nextToken += 1
            buffer.yield(ReplicatorChange(replicator: replicator, status: state.status))
            state.statusBuffers[state.nextToken] = buffer
            return state.nextToken
        }
        buffer.setOnTermination { [weak self] in self?.state.withLock { _ = $0.statusBuffers.removeValue(forKey: token) } }
        return ChangeStream(buffer: buffer)
    }

    func documentStream() -> ChangeStream<DocumentReplication> {
        // One event per batch while the consumer keeps up; a lagging consumer gets later batches
        // appended to the newest queued event of the same direction (pushed and pulled documents
        // never mix), so its backlog stays bounded and no document is dropped.
        let buffer = ChangeBuffer<DocumentReplication>(compatible: { $0.isPush == $1.isPush }) { queued, newer in
            queued = DocumentReplication(
                replicator: queued.replicator, isPush: queued.isPush,
                documents: queued.documents + newer.documents)
        }
        let token = state.withLock { state -> Int in
            state.nextToken += 1
            state.documentBuffers[state.nextToken] = buffer
            return state.nextToken
        }
        buffer.setOnTermination { [weak self] in self?.state.withLock { _ = $0.documentBuffers.removeValue(forKey: token) } }
        return ChangeStream(buffer: buffer)
    }

    /// Ends every stream (the replicator is gone).
    func finishStreams() {
        let buffers = state.withLock { state in
            (Array(state.statusBuffers.values), Array(state.documentBuffers.values))
        }
        buffers.0.forEach { $0.finish() }
        buffers.1.forEach { $0.finish() }
    }
}
