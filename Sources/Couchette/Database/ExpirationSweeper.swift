/// The background task that purges expired documents, also after a reopen; one per ``Database``.
///
/// It sleeps until the earliest stored expiration (or an hour when there is none), and is woken
/// early whenever an expiration is set (``wake()``). It holds the database weakly: dropping the
/// last reference to a database ends it.
final class ExpirationSweeper: Sendable {
    static let idleInterval: Duration = .seconds(3600)

    private let signal = WakeSignal()
    private let task = Locked<Task<Void, Never>?>(nil)

    func start(for database: Database) {
        let signal = self.signal
        let started = Task.detached { [weak database] in
            while !Task.isCancelled {
                guard let delay = await Self.sweep(database) else { return }
                await signal.wait(timeout: delay)
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

    /// Purges what is due; returns how long to sleep, or nil when the database is gone.
    private static func sweep(_ database: Database?) async -> Duration? {
        guard let database, database.reader.isOpen else { return nil }
        do {
            guard let next = try await database.purgeExpiredDocuments() else { return idleInterval }
            let wait = Int64(next) - Int64(Clock.nowMilliseconds())
            return .milliseconds(max(1, min(wait, 3_600_000)))
        } catch {
            return database.reader.isOpen ? .seconds(1) : nil  // transient failure: try again soon
        }
    }
}
