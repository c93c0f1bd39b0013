import Foundation

/// The writes waiting for the database's writer thread.
///
/// Callers append from any thread; the writer takes everything queued at the start of a commit,
/// and may block for a moment (``take(atLeast:waitingAtMost:)``) so that writers known to be on
/// their way join the same commit: appending wakes it as soon as enough writes are there, so
/// the wait ends with the last straggler rather than at a polling tick.
final class WriteQueue: @unchecked Sendable {
    // @unchecked: `writes` and `wanted` are only touched while `condition` is locked.
    private let condition = NSCondition()
    private var writes: [PendingWrite] = []
    /// How many queued writes end the writer's wait (`Int.max`: nobody waits).
    private var wanted = Int.max

    func append(_ write: PendingWrite) {
        condition.lock()
        writes.append(write)
        if writes.count >= wanted { condition.signal() }
        condition.unlock()
    }

    /// How many writes are queued now.
    var count: Int {
        condition.lock()
        defer { condition.unlock() }
        return writes.count
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
}
