import Foundation

/// The wall clock expiration reads: the visibility rule's "now" (a document whose expiration has
/// passed is hidden at once), the `now` of each commit, and the background purge's sleep until
/// the next expiration. One per ``Database``, given at open; tests give a clock they move by hand
/// instead of sleeping.
protocol WallClock: Sendable {
    /// Milliseconds since 1970, the unit of stored expirations.
    func nowMilliseconds() -> UInt64
    /// Returns once ``nowMilliseconds()`` has reached `deadline`, or when the calling task is
    /// cancelled (a signal to look again early cancels the sleep).
    func sleep(untilMilliseconds deadline: UInt64) async
}

/// The system's real-time clock.
struct SystemClock: WallClock {
    func nowMilliseconds() -> UInt64 {
        UInt64(max(0, (Date().timeIntervalSince1970 * 1000).rounded(.down)))
    }

    func sleep(untilMilliseconds deadline: UInt64) async {
        let now = nowMilliseconds()
        guard deadline > now else { return }
        try? await Task.sleep(for: .milliseconds(deadline - now))
    }
}
