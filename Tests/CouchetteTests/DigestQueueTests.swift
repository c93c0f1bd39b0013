import Dispatch
import Testing

@testable import Couchette

/// The digest thread (``BodyDigester/queue``) is shared by every batch of the process. A writer
/// never waits behind the work queued there for other batches: the chunks of its own batch that
/// the queue has not started, it computes itself. And one digester queues at most
/// ``BodyDigester/maximumQueuedChunks`` chunks; past that, its caller computes them.
///
/// No test blocks a thread of the cooperative pool while the queue is held: with two cores, two
/// such waits would stop every task of the process until the holder gives up.
@Suite(.serialized, .tags(.concurrency)) struct DigestQueueTests {
    @Test(.timeLimit(.minutes(2))) func aBatchOfUpdatesCommitsWhileTheDigestQueueIsHeld() async throws {
        try await withDatabase { database, _ in
            let collection = try database.defaultCollection()
            let ids = (0..<(UpdateRevisions.chunkCount * 3)).map { "u\($0)" }
            let edits = try await collection.savedForUpdates(ids).map { $0.setInt(1, forKey: "visits") }
            let parents = edits.map(\.revisionID)

            let holder = DigestQueueHolder()
            try await database.inBatch { batch in
                for edit in edits { try batch.save(document: edit, in: collection) }
            }
            #expect(holder.isHolding, "the commit waited for the digest queue")
            holder.release()

            for (edit, parent) in zip(edits, parents) {
                let stored = try #require(try await collection.document(id: edit.id))
                #expect(stored.revisionID == (try RevisionID.make(parent: parent, deleted: false, body: stored.body)))
                #expect(stored.revisionID == edit.revisionID)
            }
        }
    }

    @Test(.timeLimit(.minutes(2))) func aBatchOfJSONDocumentsCommitsWhileTheDigestQueueIsHeld() async throws {
        try await withDatabase { database, _ in
            let collection = try database.defaultCollection()
            // Some chunks of bodies: handed to the digest thread while the batch is filled.
            let texts = (0..<3_000).map { #"{"n":\#($0),"pad":"\#(String(repeating: "p", count: 40))"}"# }
            let holder = DigestQueueHolder()
            try await database.inBatch { batch in
                for (number, text) in texts.enumerated() { try batch.save(id: "j\(number)", json: text, in: collection) }
            }
            #expect(holder.isHolding, "the commit waited for the digest queue")
            holder.release()

            #expect(try await collection.count == UInt64(texts.count))
            for number in [0, 1_500, texts.count - 1] {
                let stored = try #require(try await collection.document(id: "j\(number)"))
                #expect(stored.revisionID == (try RevisionID.make(parent: nil, deleted: false, body: JSON.encodeBinary(texts[number]))))
            }
        }
    }

    @Test(.timeLimit(.minutes(2))) func aDigesterQueuesAtMostItsBoundAndItsWaiterComputesTheRest() async throws {
        let holder = DigestQueueHolder()
        defer { holder.release() }
        let digester = BodyDigester()
        let ran = Locked(0)
        let extra = 5
        let jobs = (0..<(BodyDigester.maximumQueuedChunks + extra)).map { _ in digester.run { ran.withLock { $0 += 1 } } }
        #expect(jobs.prefix(BodyDigester.maximumQueuedChunks).allSatisfy { $0 != nil }, "queued")
        #expect(jobs.suffix(extra).allSatisfy { $0 == nil }, "past the bound: run by the caller")
        #expect(ran.withLock { $0 } == extra)
        try digester.waitForChunks()
        #expect(ran.withLock { $0 } == BodyDigester.maximumQueuedChunks + extra, "the waiter ran the queued ones")
        #expect(holder.isHolding)
        holder.release()
        // Once the queue gets to them, it finds them done: none runs twice.
        await digestQueuePassed()
        #expect(ran.withLock { $0 } == BodyDigester.maximumQueuedChunks + extra)
    }

    @Test(.timeLimit(.minutes(2))) func aCancelledDigesterSkipsItsQueuedChunksAndCannotBeWritten() async throws {
        let holder = DigestQueueHolder()
        defer { holder.release() }
        let digester = BodyDigester()
        let ran = Locked(0)
        for _ in 0..<3 { digester.run { ran.withLock { $0 += 1 } } }
        digester.cancel()
        holder.release()
        #expect(throws: CouchetteError.self) { try digester.waitForChunks() }
        await digestQueuePassed()
        #expect(ran.withLock { $0 } == 0)
    }
}

/// Returns once the digest queue has run everything queued before this call (suspended
/// meanwhile, not blocking a thread).
private func digestQueuePassed() async {
    await withCheckedContinuation { (passed: CheckedContinuation<Void, Never>) in
        BodyDigester.queue.async { passed.resume() }
    }
}

/// Holds the digest queue, as a long run of another batch's chunks would, until released — at the
/// latest after a minute, so that a test that fails still ends.
private final class DigestQueueHolder: Sendable {
    private let released = DispatchSemaphore(value: 0)
    private let holding = Locked(true)

    init() {
        BodyDigester.queue.async { [released, holding] in
            _ = released.wait(timeout: .now() + 60)
            holding.withLock { $0 = false }
        }
    }

    deinit { released.signal() }

    /// Whether the queue has not got past the holder yet.
    var isHolding: Bool { holding.withLock { $0 } }

    func release() { released.signal() }
}
