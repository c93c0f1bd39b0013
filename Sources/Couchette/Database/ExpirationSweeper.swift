/// The background task that purges expired documents, also after a reopen; one per ``Database``.
///
/// It sleeps until the earliest stored expiration (or an hour when there is none), as the
/// database's ``WallClock`` tells time, and is woken early whenever an expiration is set
/// (``wake()``). It holds the database weakly: dropping the last reference to a database ends it.
final class ExpirationSweeper: Sendable {
    /// How long to sleep when no expiration is stored, in milliseconds.
    static let idleInterval: UInt64 = 3_600_000

    private let signal = WakeSignal()
    private let task = Locked<Task<Void, Never>?>(nil)
    private let clock: any WallClock

    init(clock: any WallClock) {
        self.clock = clock
    }

    func start(for database: Database) {
        let signal = self.signal
        let clock = self.clock
        let started = Task.detached { [weak database] in
            while !Task.isCancelled {
                guard let deadline = await Self.sweep(database, clock: clock) else { return }
                await signal.wait(untilMilliseconds: deadline, on: clock)
            }
        }
        task.withLock { $0 = started }
    }

    /// An expiration was set: look again now.
    func wake() {
        signal.signal()
    }

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
