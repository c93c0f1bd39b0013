import Foundation

enum Clock {
    /// Milliseconds since 1970, the unit of stored expirations.
    static func nowMilliseconds() -> UInt64 {
        UInt64(max(0, (Date().timeIntervalSince1970 * 1000).rounded(.down)))
    }
}
