#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A readers–writer lock that makes LMDB map growth safe.
///
/// `mdb_env_set_mapsize` may only be called while no transaction of this process is active. Every
/// transaction (read or write) therefore holds the gate *shared* for its whole life, and growing the
/// map (or swapping the environment during compaction, or closing it) holds it *exclusive*.
/// The lock prefers writers so that a steady stream of readers cannot starve a resize.
///
/// Never take the gate shared twice on one thread: a waiting exclusive holder would deadlock it.
final class ResizeGate: @unchecked Sendable {
    // @unchecked: the only stored state is the pthread lock, which is itself thread-safe; it is
    // allocated once in init and destroyed once in deinit, when no other reference can exist.
    private let lock: UnsafeMutablePointer<pthread_rwlock_t>

    init() {
        lock = .allocate(capacity: 1)
        var attributes = pthread_rwlockattr_t()
        pthread_rwlockattr_init(&attributes)
        #if canImport(Glibc)
        pthread_rwlockattr_setkind_np(&attributes, Int32(PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP))
        #endif
        pthread_rwlock_init(lock, &attributes)
        pthread_rwlockattr_destroy(&attributes)
    }

    deinit {
        pthread_rwlock_destroy(lock)
        lock.deallocate()
    }

    func withShared<R>(_ body: () throws -> R) rethrows -> R {
        pthread_rwlock_rdlock(lock)
        defer { pthread_rwlock_unlock(lock) }
        return try body()
    }

    func withExclusive<R>(_ body: () throws -> R) rethrows -> R {
        pthread_rwlock_wrlock(lock)
        defer { pthread_rwlock_unlock(lock) }
        return try body()
    }
}
