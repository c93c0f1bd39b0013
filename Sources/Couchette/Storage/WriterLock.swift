import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A lock taken around every write transaction of an environment, before LMDB's own write lock,
/// so that a caller can find out without waiting whether another transaction holds that one.
///
/// LMDB's write lock is a process-shared mutex with no way to try it: `mdb_txn_begin` blocks until
/// the transaction holding it ends, however long that is, and nothing can cancel the wait. The
/// writer thread may block there; a task committing its own write (see
/// ``WriteQueue/Admission/commitHere``) must not, since it would hold one of Swift's few
/// cooperative threads with no cancellation path. It calls ``tryLock()`` first and, when another
/// transaction is under way, queues its write for the writer thread instead, where its cancelled
/// task can withdraw it.
///
/// Two locks make it: a recursive mutex for the transactions of this process, and `flock` on the
/// database folder for those of other processes (the folder, unlike `data.mdb`, stays the same
/// file when compaction replaces the data; `couchette.lock` already carries every opener's shared
/// lock). Recursive, because the task that reserved the writer with ``tryLock()`` then runs write
/// transactions that lock it again. A process that writes without this lock (an older Couchette,
/// LMDB's own tools) is not seen: a task committing its own write then still waits in
/// `mdb_txn_begin` for it. Where `flock` fails on the folder (some network file systems), only
/// this process's transactions are seen, the same way.
final class WriterLock: @unchecked Sendable {
    // @unchecked: `depth` and `folder` are only touched by the thread that holds `mutex`.
    private let mutex = NSRecursiveLock()
    /// The folder's descriptor (-1: closed, or it could not be opened).
    private var folder: Int32
    /// How many times the holding thread has locked `mutex` (the folder is locked at depth 1).
    private var depth = 0

    init(folder path: String) {
        folder = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
    }

    deinit {
        if folder >= 0 { Glibc.close(folder) }
    }

    /// Takes the lock, waiting as long as another transaction holds it.
    func lock() {
        mutex.lock()
        depth += 1
        guard depth == 1, folder >= 0 else { return }
        while flock(folder, LOCK_EX) != 0 && errno == EINTR {}
    }

    /// Takes the lock if no other transaction holds it; false (and nothing taken) otherwise.
    func tryLock() -> Bool {
        guard mutex.try() else { return false }
        if depth == 0 && folder >= 0 {
            var locked: Int32
            repeat { locked = flock(folder, LOCK_EX | LOCK_NB) } while locked != 0 && errno == EINTR
            if locked != 0 && errno == EWOULDBLOCK {
                mutex.unlock()
                return false
            }
        }
        depth += 1
        return true
    }

    func unlock() {
        depth -= 1
        if depth == 0 && folder >= 0 { flock(folder, LOCK_UN) }
        mutex.unlock()
    }

    /// Closes the folder's descriptor (the environment closes): waits for this process's
    /// transactions, not for other processes'.
    func close() {
        mutex.lock()
        if folder >= 0 { Glibc.close(folder) }
        folder = -1
        mutex.unlock()
    }
}
