/// The background task that purges expired documents, also after a reopen; one per ``Database``.
///
/// It starts when the database opens with an expiration stored, or when one is first set through
/// it (``wake(for:)``): a database that never sees one runs no task, and opening it wakes no thread.
/// It sleeps until the earliest stored expiration (or an hour when there is none), as the
/// database's ``WallClock`` tells time, and is woken early whenever an expiration is set. It holds
/// the database weakly: dropping the last reference to a database ends it.
final class ExpirationSweeper: Sendable {
    /// How long to sleep when no expiration is stored, in milliseconds.
    static let idleInterval: UInt64 = 3_600_000

    private let signal = WakeSignal()
    private let task = Locked<Task<Void, Never>?>(nil)
    private let clock: any WallClock

    init(clock: any WallClock) {
        self.clock = clock
    }

    /// Starts the task unless it runs already.
    func start(for database: Database) {
        let signal = self.signal
        let clock = self.clock
        task.withLock { task in
            guard task == nil else { return }
            task = Task.detached { [weak database] in
                while !Task.isCancelled {
                    guard let deadline = await Self.sweep(database, clock: clock) else { return }
                    await signal.wait(untilMilliseconds: deadline, on: clock)
                }
            }
        }
    }

    /// An expiration was set: look again now (starting the task if it was not running).
    func wake(for database: Database) {
        start(for: database)
        signal.signal()
    }

    /// Whether the task has been started.
    var isStarted: Bool { task.withLock { $0 != nil } }

    /// Ends the task (the database closes).
    func cancel() {
        task.withLock { $0?.cancel() }
    }

    /// Purges what is due; returns when to look again (milliseconds since 1970), or nil when the
    /// database is gone.
    private static func sweep(_ database: Database?, clock: any WallClock) async -> UInt64? {
        guard let database, database.reader.isOpen else { return nil }
        let now = clock.nowMilliseconds()
        do {
            // Looked up in a snapshot here first: only a due expiration needs the actor (whose
            // writer thread a database opened only to read never starts).
            let stored = try database.reader.read { try $0.nextExpiration() }
            if let stored, stored > now { return min(stored, now + idleInterval) }
            guard stored != nil, let next = try await database.purgeExpiredDocuments() else { return now + idleInterval }
            return min(max(next, now + 1), now + idleInterval)
        } catch {
            return database.reader.isOpen ? now + 1000 : nil  // transient failure: try again soon
        }
    }
}
