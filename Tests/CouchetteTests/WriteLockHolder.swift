import Dispatch
import Foundation

@testable import Couchette

/// Holds the write lock (``WriterLock`` and LMDB's) from a thread of its own, as another
/// transaction would, until released (or for 20 s at most, so that a failing test ends).
final class WriteLockHolder: Sendable {
    private let environment: StorageEnvironment
    private let held = DispatchSemaphore(value: 0)
    private let released = DispatchSemaphore(value: 0)

    init(_ environment: StorageEnvironment) { self.environment = environment }

    /// Returns once the lock is held (true), or false when it was not taken within 20 s.
    func hold() -> Bool {
        let environment = environment
        let held = held
        let released = released
        Thread.detachNewThread {
            _ = try? environment.write { _ in
                held.signal()
                _ = released.wait(timeout: .now() + 20)
            }
        }
        return held.wait(timeout: .now() + 20) == .success
    }

    func release() { released.signal() }
}
