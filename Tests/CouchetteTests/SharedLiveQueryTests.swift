import Foundation
import Testing

@testable import Couchette

/// Live queries with the same text and parameters share one evaluation per commit.
@Suite(.tags(.concurrency)) struct SharedLiveQueryTests {
    private static let openTasks = "SELECT meta().id AS id FROM tasks WHERE done = $done ORDER BY meta().id"

    private func ids(_ change: QueryChange?) -> [String]? {
        change?.results?.map { $0.string(forKey: "id") ?? "?" }
    }

    private func openTasksQuery(_ database: Database, done: Bool = false) throws -> Query {
        let query = try database.createQuery(Self.openTasks)
        query.parameters = Parameters().setBoolean(done, forName: "done")
        return query
    }

    @Test func twoSubscribersShareOneEvaluationPerCommit() async throws {
        try await withDatabase { database, _ in
            let activity = LiveQueryActivityCounter.attached(to: database)
            let tasks = try await database.createCollection(name: "tasks")
            // Two Query objects with the same text and equal parameters.
            let first = try openTasksQuery(database), second = try openTasksQuery(database)
            let firstChanges = first.changes(), secondChanges = second.changes()
            #expect(database.observation.liveQueries.count == 1)
            let firstInitial = await firstChanges.next(), secondInitial = await secondChanges.next()
            #expect(ids(firstInitial) == [] && ids(secondInitial) == [])
            #expect(firstInitial?.query === first && secondInitial?.query === second, "each event names its own query")
            #expect(activity.counts.evaluations == 1)

            for (number, id) in ["a", "b", "c"].enumerated() {
                try await tasks.save(document: MutableDocument(id: id).setBoolean(false, forKey: "done"))
                let expected = Array(["a", "b", "c"].prefix(number + 1))
                #expect(ids(await firstChanges.next()) == expected)
                #expect(ids(await secondChanges.next()) == expected)
                #expect(activity.counts.evaluations == 2 + number, "one evaluation per commit for both subscribers")
            }
        }
    }

    @Test func aLateSubscriberGetsTheCurrentResultsWithoutAnEvaluation() async throws {
        try await withDatabase { database, _ in
            let activity = LiveQueryActivityCounter.attached(to: database)
            let tasks = try await database.createCollection(name: "tasks")
            try await tasks.save(document: MutableDocument(id: "a").setBoolean(false, forKey: "done"))
            let early = try openTasksQuery(database).changes()
            #expect(ids(await early.next()) == ["a"])
            #expect(activity.counts.evaluations == 1)
            let late = try openTasksQuery(database).changes()
            #expect(ids(await late.next()) == ["a"])
            #expect(activity.counts.evaluations == 1)
            try await tasks.save(document: MutableDocument(id: "b").setBoolean(false, forKey: "done"))
            #expect(ids(await early.next()) == ["a", "b"])
            #expect(ids(await late.next()) == ["a", "b"])
            #expect(activity.counts.evaluations == 2)
        }
    }

    @Test func otherParametersAreAnotherEvaluationAndAssigningMovesTheStream() async throws {
        try await withDatabase { database, _ in
            let tasks = try await database.createCollection(name: "tasks")
            try await tasks.save(document: MutableDocument(id: "open").setBoolean(false, forKey: "done"))
            try await tasks.save(document: MutableDocument(id: "closed").setBoolean(true, forKey: "done"))
            let open = try openTasksQuery(database).changes()
            let moving = try openTasksQuery(database)
            let movingChanges = moving.changes()
            let closed = try openTasksQuery(database, done: true).changes()
            #expect(database.observation.liveQueries.count == 2)
            #expect(ids(await open.next()) == ["open"])
            #expect(ids(await movingChanges.next()) == ["open"])
            #expect(ids(await closed.next()) == ["closed"])

            moving.parameters = Parameters().setBoolean(true, forName: "done")
            #expect(ids(await movingChanges.next()) == ["closed"], "assigning parameters always emits")
            #expect(database.observation.liveQueries.count == 2)
            try await tasks.save(document: MutableDocument(id: "closed2").setBoolean(true, forKey: "done"))
            #expect(ids(await movingChanges.next()) == ["closed", "closed2"])
            #expect(ids(await closed.next()) == ["closed", "closed2"])
            try await tasks.save(document: MutableDocument(id: "open2").setBoolean(false, forKey: "done"))
            #expect(ids(await open.next()) == ["open", "open2"], "no event came while the open tasks did not change")
        }
    }

    @Test func theLastSubscriberLeavingEndsTheSharedQuery() async throws {
        try await withDatabase { database, _ in
            _ = try await database.createCollection(name: "tasks")
            var first: ChangeStream<QueryChange>? = try openTasksQuery(database).changes()
            var second: ChangeStream<QueryChange>? = try openTasksQuery(database).changes()
            #expect(database.observation.liveQueries.count == 1)
            #expect(database.observerCount == 1)
            _ = await first?.next()
            first = nil
            #expect(database.observation.liveQueries.count == 1)
            _ = await second?.next()
            second = nil
            #expect(database.observation.liveQueries.count == 0)
            #expect(database.observerCount == 0)
            _ = (first, second)
        }
    }
}
