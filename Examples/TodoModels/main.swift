// The seed's Reactive APIs page, first half, on Couchette: Codable document models and an
// @Observable view model on the main actor. Run it with `swift run todo-models-example [DIRECTORY]`.
import Couchette
import Foundation
import Observation

// MARK: - Example 1: Data model (the seed's `Task`; renamed so Swift's `Task` stays visible)

final class TodoTask: Codable {
    @DocumentID var id: String?
    var title: String
    var completed: Bool?

    init(title: String, completed: Bool? = nil) {
        self.title = title
        self.completed = completed
    }
}

// MARK: - The ViewModel (Observation framework), adapted to async/await

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
        // The seed subscribes to `db.createQuery("SELECT meta().id, title, completed FROM tasks")`
        // here; until live queries land, the view model keeps its list itself.
    }

    func addTask(title: String) async throws {
        let task = TodoTask(title: title, completed: false)
        try await tasks.save(from: task)
        todos.append(task)
    }

    func toggleCompletion(for task: TodoTask) async throws {
        if let index = todos.firstIndex(where: { $0.id == task.id }) {
            todos[index].completed = !(todos[index].completed ?? false)
            try await tasks.save(from: todos[index])
        }
    }

    func deleteTask(_ task: TodoTask) async throws {
        try await tasks.delete(for: task)
        todos.removeAll { $0.id == task.id }
    }
}

// MARK: - Manipulate documents as Codable model objects

let directory = CommandLine.arguments.dropFirst().first ?? FileManager.default.temporaryDirectory.path
let database = try Database(name: "todo-models-example", config: DatabaseConfiguration(directory: directory))
let collection = try await database.createCollection(name: "tasks")

// Save an encodable object as a document: the id is generated and assigned to the object.
let task = TodoTask(title: "Buy milk")
try await collection.save(from: task)
print("saved \(task.id!)")

// Get a document as a decodable object.
if let document = try await collection.document(id: task.id!, as: TodoTask.self) {
    print("read '\(document.title)', completed: \(document.completed.map(String.init) ?? "nil")")
}

// Someone else edits the same task (a second object, read from the database)...
let elsewhere = try await collection.document(id: task.id!, as: TodoTask.self)!
elsewhere.title = "Buy oat milk"
try await collection.save(from: elsewhere)

// ...so our stale object conflicts: the handler merges, on our own object.
let resolved = try await collection.save(from: task) { newTask, existingTask in
    newTask.title = existingTask?.title ?? newTask.title
    newTask.completed = true
    return true
}
print("conflict resolved: \(resolved), now '\(task.title)', completed: \(task.completed ?? false)")

// Concurrency control instead of a handler.
let saved = try await collection.save(from: task, concurrencyControl: .failOnConflict)
print("saved with failOnConflict: \(saved)")

// Delete, then purge.
try await collection.delete(for: task)
print("after delete: \(try await collection.count) tasks")
try await collection.save(from: task)  // the object keeps its id: saving brings it back
try await collection.purge(for: task)
print("after purge: \(try await collection.count) tasks")

// MARK: - The view model, on the main actor (top-level code runs there)

let viewModel = try TodoViewModel(database: database)
try await viewModel.addTask(title: "Walk the dog")
try await viewModel.addTask(title: "Book flights")
try await viewModel.toggleCompletion(for: viewModel.todos[0])
try await viewModel.deleteTask(viewModel.todos[1])
for todo in viewModel.todos {
    print("view model: '\(todo.title)' completed: \(todo.completed ?? false)")
}

try await database.delete()
