import Observation
import Testing

@testable import Couchette

/// The seed's Observation view model ("Examples › ViewModel"), adapted to Couchette: the calls
/// are `async`, and until live queries land the list is kept by the view model itself (the seed
/// fills it from `createQuery(…).publish()`).
///
/// It is `@MainActor` and owns its non-Sendable model objects, yet passes them to `save(from:)`
/// and `delete(for:)`: those are `nonisolated(nonsending)`, so this compiles in Swift 6 mode
/// without warnings — the compiler proves the contract.
@MainActor @Observable
final class TodoViewModel {
    var todos: [TodoTask] = []  // Observable property automatically tracked by SwiftUI

    private let db: Database
    private let tasks: Collection

    init(database: Database) throws {
        self.db = database
        guard let tasks = try db.collection(name: "tasks") else {
            throw CouchetteError(.notFound, "collection 'tasks' not found")
        }
        self.tasks = tasks
    }

    func addTask(title: String) async throws {
        let task = TodoTask(title: title, completed: false)
        try await tasks.save(from: task)
        todos.append(task)
    }

    func toggleCompletion(for task: TodoTask) async throws {
        if let index = todos.firstIndex(where: { $0.id == task.id }) {
            todos[index].completed = !(todos[index].completed ?? false)  // Reflect UI right away
            try await tasks.save(from: todos[index])
        }
    }

    func deleteTask(_ task: TodoTask) async throws {
        try await tasks.delete(for: task)
        todos.removeAll { $0.id == task.id }
    }

    /// Reads every listed task again (what the live query will do by itself).
    func reload() async throws {
        var fresh: [TodoTask] = []
        for task in todos {
            if let id = task.id, let stored = try await tasks.document(id: id, as: TodoTask.self) { fresh.append(stored) }
        }
        todos = fresh
    }
}

@Suite struct CodableViewModelTests {
    @MainActor @Test func theSeedsViewModelWorksOnTheMainActor() async throws {
        let directory = try TemporaryDirectory()
        let database = try directory.open()
        _ = try await database.createCollection(name: "tasks")
        let viewModel = try TodoViewModel(database: database)

        let changed = Locked(false)
        withObservationTracking {
            _ = viewModel.todos
        } onChange: {
            changed.withLock { $0 = true }
        }
        try await viewModel.addTask(title: "Buy milk")
        try await viewModel.addTask(title: "Walk the dog")
        #expect(changed.withLock { $0 })
        #expect(viewModel.todos.count == 2)
        #expect(viewModel.todos.allSatisfy { $0.id != nil })

        let milk = viewModel.todos[0]
        try await viewModel.toggleCompletion(for: milk)
        let tasks = try #require(try database.collection(name: "tasks"))
        #expect(try await tasks.document(id: milk.id!, as: TodoTask.self)?.completed == true)

        // Another screen's view model edits the same task; ours saves without losing its binding.
        let other = try TodoViewModel(database: database)
        other.todos = [try #require(try await tasks.document(id: milk.id!, as: TodoTask.self))]
        try await other.toggleCompletion(for: other.todos[0])
        try await viewModel.reload()
        #expect(viewModel.todos[0].completed == false)

        try await viewModel.deleteTask(viewModel.todos[1])
        #expect(viewModel.todos.count == 1)
        #expect(try await tasks.count == 1)
        try await database.close()
    }
}
