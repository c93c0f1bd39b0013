import Foundation
import Testing

@testable import Couchette

/// `collection.changes()`: one event per commit touching the collection, in commit order.
@Suite(.tags(.concurrency)) struct CollectionChangesTests {
    private func save(_ collection: Collection, _ ids: String...) async throws {
        for id in ids { try await collection.save(document: MutableDocument(id: id).setString(id, forKey: "v")) }
    }

    /// Saves a marker document and expects it to be the next event: nothing came before it.
    private func expectNothingQueued(
        _ changes: ChangeStream<CollectionChange>, in collection: Collection, sourceLocation: SourceLocation = #_sourceLocation
    ) async throws {
        let marker = "marker-\(UUID().uuidString)"
        try await save(collection, marker)
        #expect(await changes.next()?.documentIDs == [marker], "an unexpected event was queued", sourceLocation: sourceLocation)
    }

    @Test func eachCommitIsOneEventInCommitOrderWithNoInitialEvent() async throws {
        try await withDatabase { database, _ in
            let tasks = try await database.createCollection(name: "tasks")
            try await save(tasks, "before")
            let changes = tasks.changes()
            try await save(tasks, "a", "b", "c")
            try await save(tasks, "a")
            var received: [[String]] = []
            for _ in 0..<4 { received.append(try #require(await changes.next()).documentIDs) }
            #expect(received == [["a"], ["b"], ["c"], ["a"]], "no initial event, one per commit")
            try await expectNothingQueued(changes, in: tasks)
        }
    }

    @Test func aBatchIsOneEventWithEveryID() async throws {
        try await withDatabase { database, _ in
            let tasks = try await database.createCollection(name: "tasks")
            let changes = tasks.changes()
            try await database.inBatch { batch in
                for i in 0..<10 { try batch.save(document: MutableDocument(id: "doc-\(i)"), in: tasks) }
            }
            let change = try #require(await changes.next())
            #expect(change.collection == tasks)
            #expect(change.documentIDs == (0..<10).map { "doc-\($0)" })
            try await expectNothingQueued(changes, in: tasks)
        }
    }

    @Test func deletesPurgesAndExpirationsAreChanges() async throws {
        try await withDatabase { database, _ in
            let tasks = try await database.createCollection(name: "tasks")
            try await save(tasks, "d", "p", "e")
            let changes = tasks.changes()
            try await tasks.delete(document: try #require(await tasks.document(id: "d")))
            try await tasks.purge(id: "p")
            try await tasks.setDocumentExpiration(id: "e", expiration: Date().addingTimeInterval(0.05))
            #expect(await changes.next()?.documentIDs == ["d"])
            #expect(await changes.next()?.documentIDs == ["p"])
            // Setting an expiration changes no document; the background purge does.
            #expect(await changes.next()?.documentIDs == ["e"])
            try await expectNothingQueued(changes, in: tasks)
        }
    }

    @Test func commitsToOtherCollectionsGiveNoEvent() async throws {
        try await withDatabase { database, _ in
            let tasks = try await database.createCollection(name: "tasks")
            let notes = try await database.createCollection(name: "notes")
            let changes = tasks.changes()
            try await save(notes, "n1")
            try await database.inBatch { batch in
                try batch.save(document: MutableDocument(id: "n2"), in: notes)
                try batch.save(document: MutableDocument(id: "t1"), in: tasks)
            }
            #expect(await changes.next()?.documentIDs == ["t1"])
            try await expectNothingQueued(changes, in: tasks)
        }
    }

    @Test func twoSubscribersAreIndependent() async throws {
        try await withDatabase { database, _ in
            let tasks = try await database.createCollection(name: "tasks")
            let first = tasks.changes()
            try await save(tasks, "a")
            let second = tasks.changes()
            try await save(tasks, "b")
            #expect(await first.next()?.documentIDs == ["a"])
            #expect(await first.next()?.documentIDs == ["b"])
            #expect(await second.next()?.documentIDs == ["b"])
            try await expectNothingQueued(second, in: tasks)
        }
    }

    @Test func breakingOutOfTheLoopUnregisters() async throws {
        try await withDatabase { database, _ in
            let tasks = try await database.createCollection(name: "tasks")
            #expect(database.observerCount == 0)
            let changes = tasks.changes()
            #expect(database.observerCount == 1)
            try await save(tasks, "a", "b")
            var seen: [String] = []
            for await change in changes {
                seen += change.documentIDs
                if seen.count == 2 { break }
            }
            #expect(seen == ["a", "b"])
            #expect(database.observerCount == 0)
        }
    }

    @Test func droppingAnUnusedStreamUnregisters() async throws {
        try await withDatabase { database, _ in
            let tasks = try await database.createCollection(name: "tasks")
            do {
                let changes = tasks.changes()
                #expect(database.observerCount == 1)
                _ = changes
            }
            #expect(database.observerCount == 0)
            for _ in 0..<5 { _ = tasks.changes(); _ = tasks.documentChanges(for: "x") }
            #expect(database.observerCount == 0)
        }
    }

    @Test func cancellingTheIteratingTaskUnregisters() async throws {
        try await withDatabase { database, _ in
            let tasks = try await database.createCollection(name: "tasks")
            let changes = tasks.changes()
            let received = Locked(0)
            let consumer = Task {
                for await _ in changes { received.withLock { $0 += 1 } }
                return received.withLock { $0 }
            }
            try await save(tasks, "a")
            #expect(await eventually { received.withLock { $0 } == 1 })
            consumer.cancel()
            #expect(await consumer.value == 1)
            #expect(database.observerCount == 0)
            try await save(tasks, "b")  // nothing registered any more
            #expect(await changes.next() == nil, "the stream ended with the cancellation")
        }
    }

    @Test func closingTheDatabaseFinishesTheStreamAfterQueuedEvents() async throws {
        let directory = try TemporaryDirectory()
        let database = try directory.open()
        let tasks = try await database.createCollection(name: "tasks")
        let changes = tasks.changes()
        let consumer = Task {
            var ids: [String] = []
            for await change in changes { ids += change.documentIDs }
            return ids
        }
        try await save(tasks, "a", "b")
        try await database.close()
        #expect(await consumer.value == ["a", "b"])
        #expect(database.observerCount == 0)
        // Subscribing to a closed database gives an ended stream.
        var after = tasks.changes().makeAsyncIterator()
        #expect(await after.next() == nil)
        #expect(database.observerCount == 0)
    }

    @Test func aSlowConsumerGetsMergedEventsBeyondTheThreshold() async throws {
        try await withDatabase { database, _ in
            let tasks = try await database.createCollection(name: "tasks")
            let changes = tasks.changes()
            let threshold = ChangeBuffer<CollectionChange>.mergeThreshold
            let total = 200
            for i in 0..<total { try await save(tasks, "doc-\(i)") }
            // Bounded: never more than `threshold` events queued, whatever the number of commits
            // (the event after them is the next commit's).
            var events: [[String]] = []
            for _ in 0..<threshold { events.append(try #require(await changes.next()).documentIDs) }
            // Below the threshold every commit is its own event; beyond it, one merged event
            // holds the rest in commit order: nothing is lost.
            let expected = (0..<(threshold - 1)).map { ["doc-\($0)"] } + [((threshold - 1)..<total).map { "doc-\($0)" }]
            #expect(events == expected)
            // Once drained, commits are single events again.
            try await save(tasks, "doc-0")
            #expect(await changes.next()?.documentIDs == ["doc-0"])
        }
    }

    @Test func concurrentWritersEveryIDArrivesOnceInCommitOrder() async throws {
        try await withDatabase { database, _ in
            let tasks = try await database.createCollection(name: "tasks")
            let changes = tasks.changes()
            let consumer = Task {
                var ids: [String] = []
                for await change in changes {
                    ids += change.documentIDs
                    if ids.count == 200 { break }
                }
                return ids
            }
            try await withThrowingTaskGroup(of: Void.self) { group in
                for writer in 0..<4 {
                    group.addTask {
                        for i in 0..<50 { try await tasks.save(document: MutableDocument(id: "w\(writer)-\(i)")) }
                    }
                }
                try await group.waitForAll()
            }
            let ids = await consumer.value
            #expect(Set(ids).count == 200)
            for writer in 0..<4 {  // each writer's saves are committed, hence delivered, in order
                #expect(ids.filter { $0.hasPrefix("w\(writer)-") } == (0..<50).map { "w\(writer)-\($0)" })
            }
            #expect(database.observerCount == 0)
        }
    }

    /// A stream opened while a commit runs — after the commit, with nobody observing, chose to
    /// collect no ids, before it became visible — still gets that commit's event. A `_changes`
    /// long poll subscribes, reads (too early to see the commit), then waits: it must be woken,
    /// not left to its timeout (this made the continuous replication tests miss a save by 30 s).
    @Test func aStreamOpenedWhileACommitRunsGetsItsEvent() async throws {
        try await withDatabase { database, _ in
            let collection = try database.defaultCollection()
            let opener = StreamOpener(collection)
            database.observation.observers.add(transactionObserver: opener)
            try await collection.save(document: MutableDocument(id: "during"))
            let stream = try #require(opener.stream.withLock { $0 })
            #expect(await stream.next(timeout: .seconds(5))?.documentIDs == ["during"])
            try await collection.save(document: MutableDocument(id: "after"))
            #expect(await stream.next(timeout: .seconds(5))?.documentIDs == ["after"])
        }
    }
}

/// Opens a change stream from inside the first write transaction it is told about, as a reader
/// on another thread would at that moment (the writer thread waits for it).
private final class StreamOpener: TransactionObserver {
    let collection: Collection
    let stream = Locked<ChangeStream<CollectionChange>?>(nil)

    init(_ collection: Collection) { self.collection = collection }

    func willCommit(transactionID: UInt64, _ writes: OwnWrites) {
        guard stream.withLock({ $0 == nil }) else { return }
        let changes = changesOpenedOnAnotherThread(collection)
        stream.withLock { $0 = changes }
    }

    func commitFailed(transactionID: UInt64) {}
    func willCompact() {}
    func didCompact() {}
}
