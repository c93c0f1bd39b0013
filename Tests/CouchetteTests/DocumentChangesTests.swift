import Foundation
import Testing

@testable import Couchette

/// `collection.documentChanges(for:)`: one event per commit touching that document.
@Suite(.tags(.concurrency)) struct DocumentChangesTests {
    @Test func onlyTheWatchedDocumentInCommitOrder() async throws {
        try await withDatabase { database, _ in
            let tasks = try await database.createCollection(name: "tasks")
            let notes = try await database.createCollection(name: "notes")
            let changes = tasks.documentChanges(for: "task-1")  // no initial event, even for a missing document
            try await tasks.save(document: MutableDocument(id: "task-2"))
            try await notes.save(document: MutableDocument(id: "task-1"))  // same id, other collection
            try await tasks.save(document: MutableDocument(id: "task-1").setInt(1, forKey: "n"))
            try await database.inBatch { batch in
                try batch.save(document: MutableDocument(id: "task-1").setInt(2, forKey: "n"), in: tasks)
                try batch.save(document: MutableDocument(id: "task-3"), in: tasks)
            }
            try await tasks.delete(document: try #require(await tasks.document(id: "task-1")))
            try await tasks.purge(id: "task-1")
            for _ in 0..<4 {
                let change = try #require(await changes.next())
                #expect(change.documentID == "task-1")
                #expect(change.collection == tasks)
            }
            try await database.close()
            #expect(await changes.next() == nil, "closing ends the stream after the queued events: there were four")
        }
    }

    @Test func eventsFollowTheDocumentsState() async throws {
        try await withDatabase { database, _ in
            let tasks = try await database.createCollection(name: "tasks")
            let changes = tasks.documentChanges(for: "t")
            let seen = Locked(0)
            let reader = Task {
                var states: [Int?] = []
                for await change in changes {
                    states.append(try? await change.collection.document(id: change.documentID)?.int(forKey: "n"))
                    seen.withLock { $0 = states.count }
                    if states.count == 3 { break }
                }
                return states
            }
            // Each save waits for the reader to see it, so every event reads its own state.
            for n in 1...2 {
                try await tasks.save(document: MutableDocument(id: "t").setInt(n, forKey: "n"))
                #expect(await eventually { seen.withLock { $0 } == n })
            }
            try await tasks.purge(id: "t")
            let states = await reader.value
            #expect(states.count == 3)
            #expect(states.last == .some(nil))
            #expect(database.observerCount == 0)
        }
    }

    @Test func closingFinishesAndCancellingUnregisters() async throws {
        let directory = try TemporaryDirectory()
        let database = try directory.open()
        let tasks = try database.defaultCollection()
        let kept = tasks.documentChanges(for: "a")
        let cancelled = Task { for await _ in tasks.documentChanges(for: "a") {} }
        #expect(await eventually { database.observerCount == 2 })
        cancelled.cancel()
        await cancelled.value
        #expect(database.observerCount == 1)
        try await tasks.save(document: MutableDocument(id: "a"))
        try await database.close()
        #expect(await kept.next()?.documentID == "a")
        #expect(await kept.next() == nil)
        #expect(database.observerCount == 0)
    }
}
