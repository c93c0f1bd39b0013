/// The background task that purges expired documents, also after a reopen.
///
/// It sleeps until the earliest stored expiration (or an hour when there is none), and is woken
/// early whenever an expiration is set. It holds the database weakly: dropping the last reference
/// to a database ends it.
enum ExpirationSweeper {
    static let idleInterval: Duration = .seconds(3600)

    static func start(for database: Database) {
        let core = database.core
        let task = Task.detached { [weak database] in
            while !Task.isCancelled {
                guard let delay = await sweep(database) else { return }
                await core.expirationSignal.wait(timeout: delay)
            }
        }
        core.sweeper.withLock { $0 = task }
    }

    /// Purges what is due; returns how long to sleep, or nil when the database is gone.
    private static func sweep(_ database: Database?) async -> Duration? {
        guard let database, database.core.isOpenNow else { return nil }
        do {
            guard let next = try await database.purgeExpiredDocuments() else { return idleInterval }
            let wait = Int64(next) - Int64(Clock.nowMilliseconds())
            return .milliseconds(max(1, min(wait, 3_600_000)))
        } catch {
            return database.core.isOpenNow ? .seconds(1) : nil  // transient failure: try again soon
        }
    }
}
