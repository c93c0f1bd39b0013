#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A value guarded by a pthread mutex: `withLock` is the only way in.
///
/// Used instead of `Synchronization.Mutex` because Mutex on Linux locks with raw futex calls,
/// which ThreadSanitizer cannot see: every access it guards is then reported as a race, hiding
/// real ones. A pthread mutex is understood by the sanitizer.
final class Locked<Value> {
    /// Unchecked exclusivity: only `withLock` touches it, with `mutex` held, so no two accesses
    /// ever overlap (a nested `withLock` on the same thread would deadlock first). The runtime
    /// check cost more than the lock itself on a point read's two locks.
    @exclusivity(unchecked) private var value: Value
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>

    init(_ value: Value) {
        self.value = value
        mutex = .allocate(capacity: 1)
        pthread_mutex_init(mutex, nil)
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    func withLock<R>(_ body: (inout Value) throws -> R) rethrows -> R {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value)
    }
}

// @unchecked: `value` is only read or written inside `withLock`, which holds `mutex`; the mutex is
// created in init and destroyed in deinit, when no other reference exists. Values must be Sendable
// themselves, since they are handed between the threads that take the lock.
extension Locked: @unchecked Sendable where Value: Sendable {}
