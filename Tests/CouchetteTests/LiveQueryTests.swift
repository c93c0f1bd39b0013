import Foundation
import Testing

@testable import Couchette

/// `query.changes()`: the initial results, then one event per commit that changes them.
@Suite(.tags(.concurrency)) struct LiveQueryTests {
    private static let openTasks = "SELECT meta().id AS id FROM tasks WHERE done = false ORDER BY meta().id"

    private func ids(_ change: QueryChange?) -> [String]? {
        change?.results?.map { $0.string(forKey: "id") ?? "?" }
    }

    private func save(_ collection: Collection, _ id: String, done: Bool) async throws {
        try await collection.save(document: MutableDocument(id: id).setBoolean(done, forKey: "done"))
    }

    @Test func theInitialEventComesEvenForAnEmptyCollection() async throws {
        try await withDatabase { database, _ in
            _ = try await database.createCollection(name: "tasks")
            let query = try database.createQuery(Self.openTasks)
            let changes = query.changes()
            let first = try #require(await changes.next())
            #expect(first.error == nil)
            #expect(ids(first) == [])
            #expect(first.results?.columnNames == ["id"])
            #expect(first.query === query)
        }
    }

    @Test func oneEventPerCommitThatChangesTheResults() async throws {
        try await withDatabase { database, _ in
            let tasks = try await database.createCollection(name: "tasks")
            let notes = try await database.createCollection(name: "notes")
            try await save(tasks, "a", done: false)
            let changes = try database.createQuery(Self.openTasks).changes()
            #expect(ids(await changes.next()) == ["a"])

            try await save(tasks, "b", done: false)
            #expect(ids(await changes.next()) == ["a", "b"])
            // Neither a document that does not match the WHERE clause nor another collection
            // gives an event: the next event is the next change of the results.
            try await save(tasks, "c", done: true)
            try await save(notes, "d", done: false)
            try await save(tasks, "a", done: false)  // rewritten, results equal
            try await save(tasks, "b", done: true)
            #expect(ids(await changes.next()) == ["a"])
            try await tasks.delete(document: try #require(await tasks.document(id: "a")))
            #expect(ids(await changes.next()) == [])
            try await save(tasks, "c", done: false)
            #expect(ids(await changes.next()) == ["c"])
            try await tasks.purge(id: "c")
            #expect(ids(await changes.next()) == [])
            try await database.close()
            #expect(await changes.next() == nil, "closing ends the stream after the queued events: there were none")
        }
    }

    @Test func settingParametersReRunsAndAlwaysEmits() async throws {
        try await withDatabase { database, _ in
            let tasks = try await database.createCollection(name: "tasks")
            try await database.inBatch { batch in
                for n in 1...5 { try batch.save(document: MutableDocument(id: "n\(n)").setInt(n, forKey: "n"), in: tasks) }
            }
            let query = try database.createQuery("SELECT meta().id AS id FROM tasks WHERE n >= $min ORDER BY n")
            query.parameters = Parameters().setInt(4, forName: "min")
            let changes = query.changes()
            #expect(ids(await changes.next()) == ["n4", "n5"])
            query.parameters = Parameters().setInt(2, forName: "min")
            #expect(ids(await changes.next()) == ["n2", "n3", "n4", "n5"])
            query.parameters = Parameters().setInt(2, forName: "min")  // same results: still an event
            #expect(ids(await changes.next()) == ["n2", "n3", "n4", "n5"])
            try await tasks.save(document: MutableDocument(id: "n6").setInt(6, forKey: "n"))
            #expect(ids(await changes.next()) == ["n2", "n3", "n4", "n5", "n6"])
        }
    }

    @Test func errorsArriveInTheEventAndTheStreamGoesOn() async throws {
        try await withDatabase { database, _ in
            let tasks = try await database.createCollection(name: "tasks")
            let query = try database.createQuery("SELECT meta().id AS id FROM tasks WHERE n = $n")
            let changes = query.changes()
            let failed = try #require(await changes.next())
            #expect(failed.results == nil)
            #expect((failed.error as? CouchetteError)?.code == .invalidQuery)  // $n is not set
            try await tasks.save(document: MutableDocument(id: "x").setInt(1, forKey: "n"))
            #expect((try #require(await changes.next()).error as? CouchetteError)?.code == .invalidQuery)
            query.parameters = Parameters().setInt(1, forName: "n")
            let recovered = try #require(await changes.next())
            #expect(recovered.error == nil)
            #expect(ids(recovered) == ["x"])
        }
    }

    @Test func twoSubscribersAreIndependentAndReleaseTheirObservers() async throws {
        try await withDatabase { database, _ in
            let tasks = try await database.createCollection(name: "tasks")
            let query = try database.createQuery(Self.openTasks)
            let first = query.changes()
            let second = query.changes()
            #expect(database.observerCount == 1, "same text and parameters: one shared commit observer")
            #expect(query.parameterObservers.count == 2)
            #expect(ids(await first.next()) == [])
            #expect(ids(await second.next()) == [])
            try await save(tasks, "a", done: false)
            #expect(ids(await first.next()) == ["a"])
            let breaking = Task {
                for await change in second where ids(change) == ["a"] { break }
            }
            await breaking.value
            #expect(database.observerCount == 1)
            try await save(tasks, "b", done: false)
            #expect(ids(await first.next()) == ["a", "b"])
            let cancelled = Task { for await _ in first {} }
            cancelled.cancel()
            await cancelled.value
            #expect(database.observerCount == 0)
            #expect(query.parameterObservers.count == 0)
        }
    }

    @Test func droppingTheStreamUnregisters() async throws {
        try await withDatabase { database, _ in
            _ = try await database.createCollection(name: "tasks")
            let query = try database.createQuery(Self.openTasks)
            for _ in 0..<10 { _ = query.changes() }
            #expect(database.observerCount == 0)
            #expect(query.parameterObservers.count == 0)
        }
    }

    @Test func closingTheDatabaseFinishesTheStream() async throws {
        let directory = try TemporaryDirectory()
        let database = try directory.open()
        let tasks = try await database.createCollection(name: "tasks")
        let query = try database.createQuery(Self.openTasks)
        let changes = query.changes()
        #expect(ids(await changes.next()) == [])
        try await save(tasks, "a", done: false)
        #expect(ids(await changes.next()) == ["a"])
        try await database.close()
        #expect(await changes.next() == nil)
        #expect(database.observerCount == 0)
        var late = query.changes().makeAsyncIterator()
        #expect(await late.next() == nil)
    }

    @Test func aSlowConsumerStaysBoundedAndEndsWithTheNewestResults() async throws {
        try await withDatabase { database, _ in
            let tasks = try await database.createCollection(name: "tasks")
            let changes = try database.createQuery("SELECT COUNT(*) AS n FROM tasks").changes()
            for i in 0..<300 { try await tasks.save(document: MutableDocument(id: "d\(i)")) }
            var counts: [Int] = []
            while let change = await changes.next() {
                counts.append(try #require(change.results?.allResults().first?.int(forKey: "n")))
                if counts.last == 300 { break }
            }
            // Every save had returned before the loop: the queue held at most the threshold, plus
            // the evaluation in flight and its one re-run.
            #expect(counts.count <= ChangeBuffer<QueryChange>.mergeThreshold + 2)
            // Intermediate results may be skipped, never reordered; the newest always arrives.
            #expect(counts.last == 300)
            #expect(counts == counts.sorted())
            #expect(Set(counts).count == counts.count)
        }
    }

    /// 8 writer tasks and 8 live queries; every live query's last results equal a fresh run.
    @Test func writersAndLiveQueriesConverge() async throws {
        let stress = ProcessInfo.processInfo.environment["COUCHETTE_STRESS"] == "1"
        let duration: Duration = stress ? .seconds(4) : .milliseconds(500)
        try await withDatabase { database, _ in
            let tasks = try await database.createCollection(name: "tasks")
            let texts = (0..<8).map { reader in
                switch reader % 4 {
                case 0: "SELECT meta().id AS id, n FROM tasks WHERE n % 8 = \(reader) ORDER BY meta().id"
                case 1: "SELECT COUNT(*) AS c, SUM(n) AS s FROM tasks"
                case 2: "SELECT writer, MAX(n) AS top FROM tasks GROUP BY writer ORDER BY writer"
                default: "SELECT meta().id AS id FROM tasks WHERE n >= $min ORDER BY n DESC, meta().id LIMIT 5"
                }
            }
            let queries = try texts.map { text in
                let query = try database.createQuery(text)
                query.parameters = Parameters().setInt(10, forName: "min")
                return query
            }
            let latest = Locked<[Int: [String]]>([:])
            let readers = queries.enumerated().map { index, query in
                let changes = query.changes()
                return Task {
                    for await change in changes {
                        #expect(change.error == nil)
                        let rows = change.results?.map { $0.toJSON() } ?? []
                        latest.withLock { $0[index] = rows }
                    }
                }
            }
            let deadline = ContinuousClock.now + duration
            try await withThrowingTaskGroup(of: Void.self) { group in
                for writer in 0..<8 {
                    group.addTask {
                        var n = 0
                        while ContinuousClock.now < deadline {
                            n += 1
                            let id = "w\(writer)-\(n % 20)"
                            if n % 7 == 0 {
                                if let doc = try await tasks.document(id: id) { try await tasks.delete(document: doc) }
                            } else {
                                try await tasks.save(
                                    document: MutableDocument(id: id)
                                        .setInt(n, forKey: "n").setInt(writer, forKey: "writer"))
                            }
                        }
                    }
                }
                try await group.waitForAll()
            }
            for (index, query) in queries.enumerated() {
                let fresh = try await query.execute().map { $0.toJSON() }
                let converged = await eventually(timeout: .seconds(30)) { latest.withLock { $0[index] } == fresh }
                #expect(converged, "live query \(index) (\(texts[index])) did not converge")
            }
            for reader in readers { reader.cancel() }
            for reader in readers { await reader.value }
            #expect(database.observerCount == 0)
        }
    }
}
