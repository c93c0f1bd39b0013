import Foundation
import Observation
import Testing

@testable import Couchette

/// `ObservableQuery`: a live query decoded into class models on the main actor.
@MainActor @Suite(.tags(.concurrency)) struct ObservableQueryTests {
    private static let sql = "SELECT meta().id AS id, title, completed FROM tasks ORDER BY title"

    @Test func elementsFollowTheDatabase() async throws {
        try await withDatabase { database, _ in
            let tasks = try await database.createCollection(name: "tasks")
            let todos = ObservableQuery(try database.createQuery(Self.sql), as: TodoTask.self)
            #expect(todos.elements.isEmpty)
            let milk = TodoTask(title: "Buy milk", completed: false)
            try await tasks.save(from: milk)
            #expect(await eventually { todos.elements.map(\.title) == ["Buy milk"] })
            #expect(todos.elements.first?.id == milk.id)
            try await tasks.save(from: TodoTask(title: "Call Ann", completed: false))
            #expect(await eventually { todos.elements.map(\.title) == ["Buy milk", "Call Ann"] })
            try await tasks.delete(for: milk)
            #expect(await eventually { todos.elements.map(\.title) == ["Call Ann"] })
            #expect(todos.error == nil)
        }
    }

    @Test func observationTracksElements() async throws {
        try await withDatabase { database, _ in
            let tasks = try await database.createCollection(name: "tasks")
            let todos = ObservableQuery(try database.createQuery(Self.sql), as: TodoTask.self)
            let changed = Locked(false)
            withObservationTracking {
                _ = todos.elements
            } onChange: {
                changed.withLock { $0 = true }
            }
            try await tasks.save(from: TodoTask(title: "Walk the dog"))
            #expect(await eventually { changed.withLock { $0 } })
        }
    }

    @Test func decodingAndQueryErrorsAreReported() async throws {
        try await withDatabase { database, _ in
            let tasks = try await database.createCollection(name: "tasks")
            try await tasks.save(document: MutableDocument(id: "t").setString("x", forKey: "title"))
            // The rows lack `title`: decoding fails and the error is published.
            let missing = ObservableQuery(try database.createQuery("SELECT meta().id AS id FROM tasks"), as: TodoTask.self)
            #expect(await eventually { missing.error != nil })
            #expect((missing.error as? CouchetteError)?.code == .invalidQuery)
            // A query error (unset parameter), then recovery when the parameter is set.
            let query = try database.createQuery("SELECT meta().id AS id, title FROM tasks WHERE title = $t")
            let byTitle = ObservableQuery(query, as: TodoTask.self)
            #expect(await eventually { byTitle.error != nil })
            query.parameters = Parameters().setString("x", forName: "t")
            #expect(await eventually { byTitle.error == nil && byTitle.elements.map(\.title) == ["x"] })
        }
    }

    @Test func releasingItStopsObserving() async throws {
        try await withDatabase { database, _ in
            _ = try await database.createCollection(name: "tasks")
            var todos: ObservableQuery<TodoTask>? = ObservableQuery(try database.createQuery(Self.sql), as: TodoTask.self)
            #expect(database.observerCount == 1)
            _ = todos?.elements
            todos = nil
            #expect(await eventually { database.observerCount == 0 })
        }
    }

    @Test func closingTheDatabaseEndsObservation() async throws {
        let directory = try TemporaryDirectory()
        let database = try directory.open()
        _ = try await database.createCollection(name: "tasks")
        let todos = ObservableQuery(try database.createQuery(Self.sql), as: TodoTask.self)
        try await database.close()
        #expect(database.observerCount == 0)
        _ = todos
    }
}
