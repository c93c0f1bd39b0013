import Foundation
import Testing

@testable import Couchette

/// A live query over one collection skips re-running after commits whose documents neither
/// passed WHERE at the last evaluation nor pass it now (see `MatchTracking`).
@Suite(.tags(.concurrency)) struct LiveQuerySkippingTests {
    private func ids(_ change: QueryChange?) -> [String]? {
        change?.results?.map { $0.string(forKey: "id") ?? "?" }
    }

    private func save(_ collection: Collection, _ id: String, done: Bool, title: String = "") async throws {
        try await collection.save(document: MutableDocument(id: id).setBoolean(done, forKey: "done").setString(title, forKey: "title"))
    }

    @Test func commitsOfDocumentsThatNeverMatchAreSkipped() async throws {
        try await withDatabase { database, _ in
            let activity = LiveQueryActivityCounter.attached(to: database)
            let tasks = try database.defaultCollection()
            try await save(tasks, "open-1", done: false)
            let changes = try database.createQuery("SELECT meta().id AS id FROM _ WHERE done = false ORDER BY meta().id").changes()
            #expect(ids(await changes.next()) == ["open-1"])
            #expect(activity.counts == (1, 0))

            try await save(tasks, "done-1", done: true)
            #expect(await eventually { activity.counts.skipped == 1 })
            try await save(tasks, "done-2", done: true)
            #expect(await eventually { activity.counts.skipped == 2 })
            #expect(activity.counts.evaluations == 1, "no re-run for documents that cannot match")

            try await save(tasks, "open-2", done: false)
            #expect(ids(await changes.next()) == ["open-1", "open-2"], "the next event is the matching save's")
            #expect(activity.counts.evaluations == 2)
        }
    }

    @Test func aDocumentLeavingOrChangingInsideTheResultsReRuns() async throws {
        try await withDatabase { database, _ in
            let activity = LiveQueryActivityCounter.attached(to: database)
            let tasks = try database.defaultCollection()
            try await save(tasks, "a", done: false, title: "first")
            try await save(tasks, "b", done: false)
            let changes = try database.createQuery("SELECT meta().id AS id, title FROM _ WHERE done = false ORDER BY meta().id").changes()
            #expect(ids(await changes.next()) == ["a", "b"])

            try await save(tasks, "a", done: false, title: "renamed")  // matched before and now
            let renamed = await changes.next()
            #expect(renamed?.results?.allResults().first?.string(forKey: "title") == "renamed")

            try await save(tasks, "b", done: true)  // matched before, not now
            #expect(ids(await changes.next()) == ["a"])
            try await tasks.delete(document: try #require(await tasks.document(id: "a")))
            #expect(ids(await changes.next()) == [])
            #expect(activity.counts.skipped == 0)
        }
    }

    @Test func aggregatesSkipToo() async throws {
        try await withDatabase { database, _ in
            let activity = LiveQueryActivityCounter.attached(to: database)
            let tasks = try database.defaultCollection()
            let changes = try database.createQuery("SELECT COUNT(*) AS n FROM _ WHERE done = false").changes()
            #expect(await changes.next()?.results?.allResults().first?.int(forKey: "n") == 0)
            try await save(tasks, "done", done: true)
            #expect(await eventually { activity.counts.skipped == 1 })
            try await save(tasks, "open", done: false)
            #expect(await changes.next()?.results?.allResults().first?.int(forKey: "n") == 1)
        }
    }

    @Test func aLimitWithoutOrderStaysCorrect() async throws {
        try await withDatabase { database, _ in
            let tasks = try database.defaultCollection()
            for number in 0..<6 { try await save(tasks, "t\(number)", done: false) }
            let query = try database.createQuery("SELECT meta().id AS id FROM _ WHERE done = false LIMIT 2")
            let changes = query.changes()
            #expect(ids(await changes.next()) == ["t0", "t1"])
            try await save(tasks, "t5", done: true)  // after the scan stopped: no change to the results
            try await save(tasks, "t0", done: true)  // inside the results
            var latest = ids(await changes.next())
            while latest != ["t1", "t2"], let next = ids(await changes.next()) { latest = next }
            #expect(latest == ["t1", "t2"])
            #expect(try await query.execute().map { $0.string(forKey: "id") ?? "?" } == ["t1", "t2"])
        }
    }

    @Test func joinsAlwaysReRun() async throws {
        try await withDatabase { database, _ in
            let activity = LiveQueryActivityCounter.attached(to: database)
            let tasks = try database.defaultCollection()
            let lists = try await database.createCollection(name: "lists")
            try await lists.save(document: MutableDocument(id: "l").setString("groceries", forKey: "name"))
            let query = try database.createQuery(
                "SELECT t.title FROM _ AS t JOIN lists AS l ON t.list = meta(l).id WHERE t.done = false")
            let changes = query.changes()
            _ = await changes.next()
            try await save(tasks, "done", done: true)
            #expect(await eventually { activity.counts.evaluations == 2 })
            #expect(activity.counts.skipped == 0)
        }
    }
}
