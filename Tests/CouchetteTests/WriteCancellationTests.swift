import Dispatch
import Foundation
import Testing

@testable import Couchette

/// A save waiting for the writer is withdrawn when its task is cancelled: it throws
/// `CancellationError` at once — even while the writer itself waits for LMDB's write lock, which
/// another transaction (another process, in real life) holds — and is never written.
@Suite(.tags(.concurrency)) struct WriteCancellationTests {
    @Test(.timeLimit(.minutes(3))) func aQueuedSaveIsWithdrawnWhenItsTaskIsCancelled() async throws {
        try await withDatabase { database, _ in
            let collection = try database.defaultCollection()
            try await collection.save(document: MutableDocument(id: "before"))
            let lock = WriteLockHolder(database.core.environment)
            try #require(lock.hold(), "the write lock was not taken")
            // Saved from an actor, the writes queue for the writer thread, which takes the first
            // and waits for the lock; the second stays queued behind it.
            let saver = CancellableSaver()
            let taken = Task { try await saver.save(collection, "taken") }
            try await Task.sleep(for: .milliseconds(100))
            let queued = Task { try await saver.save(collection, "queued") }
            try await Task.sleep(for: .milliseconds(100))
            let cancelled = ContinuousClock.now
            taken.cancel()
            queued.cancel()
            for task in [taken, queued] {
                await #expect(throws: CancellationError.self) { try await task.value }
            }
            // Without the withdrawal they would have waited for the lock, let go after 20 s.
            #expect(ContinuousClock.now - cancelled < .seconds(10), "the cancelled saves waited for the writer")
            lock.release()

            // The writer goes on: later saves commit, and the withdrawn ones were never written.
            try await saver.save(collection, "after")
            #expect(try await collection.document(id: "after") != nil)
            #expect(try await collection.document(id: "taken") == nil)
            #expect(try await collection.document(id: "queued") == nil)
            #expect(try await collection.count == 2)
            try await database.performMaintenance(type: .integrityCheck)
        }
    }

    /// Batches of ``Database/inBatches(_:)`` always wait for the writer thread: cancelled while
    /// one waits, the loop throws `CancellationError`, runs no further body, and writes nothing.
    @Test(.timeLimit(.minutes(3))) func aWaitingBatchLoopIsWithdrawnWhenItsTaskIsCancelled() async throws {
        try await withDatabase { database, _ in
            let collection = try database.defaultCollection()
            let lock = WriteLockHolder(database.core.environment)
            try #require(lock.hold(), "the write lock was not taken")
            let bodies = Locked(0)
            let loop = Task {
                try await database.inBatches { batch in
                    let body = bodies.withLock { count -> Int in
                        count += 1
                        return count
                    }
                    try batch.save(document: MutableDocument(id: "batch-\(body)"), in: collection)
                    return body < 3
                }
            }
            try await Task.sleep(for: .milliseconds(200))
            let cancelled = ContinuousClock.now
            loop.cancel()
            await #expect(throws: CancellationError.self) { try await loop.value }
            #expect(ContinuousClock.now - cancelled < .seconds(10), "the cancelled batch waited for the writer")
            // Its documents are tracked (saved again on their new revisions), so each batch is
            // waited for before the next body: the first one never committed, so no second.
            #expect(bodies.withLock { $0 } == 1)
            lock.release()
            try await collection.save(document: MutableDocument(id: "after"))
            #expect(try await collection.document(id: "batch-1") == nil)
            #expect(try await collection.count == 1)
        }
    }

    /// A cancelled task whose save a commit has already claimed gets its outcome as usual: the
    /// save is written and returns normally (cancellation cannot undo a write being committed).
    @Test func aClaimedWriteIsNotWithdrawn() async throws {
        let write = PendingWrite([])
        #expect(write.claim())
        #expect(!write.withdraw())
        write.complete(.success([.done]))
        write.finish()
        await write.completion()
        #expect(try write.outcomes() == [.done])

        let withdrawn = PendingWrite([])
        #expect(withdrawn.withdraw())
        #expect(!withdrawn.claim(), "a withdrawn write is never applied")
        withdrawn.complete(.success([.done]))  // the committer leaves it alone
        withdrawn.finish()
        await withdrawn.completion()
        #expect(throws: CancellationError.self) { try withdrawn.outcomes() }
    }
}

private actor CancellableSaver {
    func save(_ collection: Collection, _ id: String) async throws {
        try await collection.save(document: MutableDocument(id: id))
    }
}
