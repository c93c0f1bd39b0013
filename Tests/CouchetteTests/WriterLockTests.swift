import Foundation
import Testing

@testable import Couchette

#if canImport(Glibc)
import Glibc
#endif

/// A task that would commit its own save (on no actor, nobody else saving) never waits on its
/// cooperative thread for a write lock another transaction holds: it leaves the wait to the writer
/// thread, where its cancelled task withdraws the save (see ``WriterLock``).
@Suite(.tags(.concurrency)) struct WriterLockTests {
    /// Another transaction of this process holds LMDB's write lock (as an index build would).
    @Test(.timeLimit(.minutes(3))) func aLoneSaveDoesNotWaitForATransactionOfThisProcess() async throws {
        try await withDatabase { database, _ in
            let collection = try database.defaultCollection()
            try await collection.save(document: MutableDocument(id: "before"))
            let lock = WriteLockHolder(database.core.environment)
            try #require(lock.hold(), "the write lock was not taken")
            // On no actor and alone, the save would commit on its own thread.
            let save = Task.detached { try await collection.save(document: MutableDocument(id: "waiting")) }
            try await Task.sleep(for: .milliseconds(200))
            let cancelled = ContinuousClock.now
            save.cancel()
            await #expect(throws: CancellationError.self) { try await save.value }
            // Waiting in `mdb_txn_begin`, it would have been saved once the holder let go (20 s).
            #expect(ContinuousClock.now - cancelled < .seconds(10), "the cancelled save waited for the write lock")
            lock.release()

            try await collection.save(document: MutableDocument(id: "after"))
            #expect(try await collection.document(id: "waiting") == nil)
            #expect(try await collection.count == 2)
        }
    }

    /// Another process's Couchette holds the writer lock: it locks the database folder (`flock`,
    /// here from a descriptor of the test's own) before LMDB's write lock.
    @Test(.timeLimit(.minutes(3))) func aLoneSaveDoesNotWaitForAnotherProcesssTransaction() async throws {
        try await withDatabase { database, _ in
            let collection = try database.defaultCollection()
            try await collection.save(document: MutableDocument(id: "before"))
            let folder = open(database.core.environment.path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
            try #require(folder >= 0)
            defer { close(folder) }
            try #require(flock(folder, LOCK_EX) == 0)

            let cancelledSave = Task.detached { try await collection.save(document: MutableDocument(id: "cancelled")) }
            try await Task.sleep(for: .milliseconds(200))
            cancelledSave.cancel()
            await #expect(throws: CancellationError.self) { try await cancelledSave.value }

            // A save that is not cancelled waits (on the writer thread) and is written once the
            // other transaction ends.
            let waitingSave = Task.detached { try await collection.save(document: MutableDocument(id: "waiting")) }
            try await Task.sleep(for: .milliseconds(200))
            #expect(try await collection.document(id: "waiting") == nil, "saved while another process held the writer lock")
            flock(folder, LOCK_UN)
            try await waitingSave.value
            #expect(try await collection.document(id: "waiting") != nil)
            #expect(try await collection.document(id: "cancelled") == nil)
            #expect(try await collection.count == 2)
        }
    }

    /// Nothing else writing, a lone save still commits on its own thread (no thread hand-off):
    /// the writer thread never starts.
    @Test func aLoneSaveStillCommitsOnItsOwnThread() async throws {
        try await withDatabase { database, _ in
            let collection = try database.defaultCollection()
            try await Task.detached {
                for index in 0..<3 { try await collection.save(document: MutableDocument(id: "lone-\(index)")) }
            }.value
            #expect(try await collection.count == 3)
            #expect(!database.writer.hasStarted, "a lone save was handed to the writer thread")
        }
    }
}
