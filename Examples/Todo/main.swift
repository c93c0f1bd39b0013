// A terminal to-do list on a live query: the seed's Observation view model, with the screen
// re-rendered from `ObservableQuery` changes. Run it with `swift run todo [DB]`.
//
// DB names the database the way the `couchette` tool does: `path/name` (or `path/name.couchette`)
// is the folder `path/name.couchette/`. The default is `todo`: the folder `todo.couchette/` in the
// current directory. The tasks live in the collection `tasks`.
//
// Commands, one per line (typed, or piped into standard input):
//     a <title>   add a task
//     t <n>       toggle task n's completion
//     d <n>       delete task n
//     q           quit (so does the end of the input)
//
// Changes written by another process to the same database appear as well, for example:
//     couchette put todo call-ann '{"title": "Call Ann", "completed": false}' --collection tasks
//
// On Linux the main actor runs on the main thread; the keyboard is read on a thread of its own,
// so waiting for input never keeps the main actor from rendering.
import Couchette
import Foundation
import Observation

// MARK: - The data model (the seed's `Task`; renamed so Swift's `Task` stays visible)

final class TodoTask: Codable {
    @DocumentID var id: String?
    var title: String
    var completed: Bool?

    init(title: String, completed: Bool? = nil) {
        self.title = title
        self.completed = completed
    }
}

// MARK: - The view model (the seed's Observation `TodoViewModel`)

@MainActor @Observable
final class TodoViewModel {
    /// Follows the database: every commit that changes the results, from this process or
    /// another, updates `todos.elements` (and with it the screen).
    let todos: ObservableQuery<TodoTask>

    private let tasks: Collection

    init(database: Database, tasks: Collection) throws {
        self.tasks = tasks
        let query = "SELECT meta().id AS id, title, completed FROM tasks ORDER BY title, meta().id"
        todos = ObservableQuery(try database.createQuery(query), as: TodoTask.self)
    }

    func addTask(title: String) async throws {
        try await tasks.save(from: TodoTask(title: title, completed: false))
    }

    func toggleCompletion(for task: TodoTask) async throws {
        if let current = todos.elements.first(where: { $0.id == task.id }) {
            current.completed = !(current.completed ?? false)  // reflected at once; the live query confirms
            try await tasks.save(from: current)
        }
    }

    func deleteTask(_ task: TodoTask) async throws {
        try await tasks.delete(for: task)
    }
}

// MARK: - The screen: a full re-render whenever something it shows changes

@MainActor @Observable
final class Screen {
    /// The outcome of the last command that failed, shown under the list.
    var status: String?

    @ObservationIgnored let model: TodoViewModel
    @ObservationIgnored let location: String
    @ObservationIgnored private let isTerminal = isatty(STDOUT_FILENO) == 1

    init(model: TodoViewModel, location: String) {
        self.model = model
        self.location = location
    }

    /// Draws the screen and re-draws it, once, as soon as anything it read changes.
    func render() {
        withObservationTracking {
            draw()
        } onChange: {
            // Called before the change is applied: render once the main actor has applied it.
            Task { @MainActor in self.render() }
        }
    }

    private func draw() {
        var text = isTerminal ? "\u{1B}[2J\u{1B}[H" : "----\n"
        let todos = model.todos.elements
        let done = todos.filter { $0.completed == true }.count
        text += "To-do list in \(location): \(todos.count) task\(todos.count == 1 ? "" : "s"), \(done) done\n\n"
        if todos.isEmpty { text += "  (nothing to do)\n" }
        for (index, task) in todos.enumerated() {
            text += "  \(index + 1). [\(task.completed == true ? "x" : " ")] \(task.title)\n"
        }
        if let error = model.todos.error { text += "\nquery error: \(error)\n" }
        if let status { text += "\n\(status)\n" }
        text += "\na <title> add · t <n> toggle · d <n> delete · q quit\n"
        FileHandle.standardOutput.write(Data(text.utf8))
    }

    /// Runs one command line; false when it asks to quit.
    func handle(_ line: String) async -> Bool {
        let trimmed = line.trimmingCharacters(in: .whitespaces)
        guard let verb = trimmed.first else { return true }
        let argument = trimmed.dropFirst().trimmingCharacters(in: .whitespaces)
        do {
            switch verb {
            case "q":
                return false
            case "a" where !argument.isEmpty:
                try await model.addTask(title: argument)
            case "t", "d":
                let todos = model.todos.elements
                guard let number = Int(argument), todos.indices.contains(number - 1) else {
                    throw CommandError("no task \(argument) (1…\(todos.count))")
                }
                if verb == "t" {
                    try await model.toggleCompletion(for: todos[number - 1])
                } else {
                    try await model.deleteTask(todos[number - 1])
                }
            default:
                throw CommandError("unknown command '\(trimmed)'")
            }
            if status != nil { status = nil }
        } catch {
            status = "error: \(error)"
        }
        return true
    }
}

struct CommandError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

// MARK: - Main

let argument = CommandLine.arguments.dropFirst().first ?? "todo"
let url = URL(fileURLWithPath: argument.hasSuffix(".couchette") ? String(argument.dropLast(".couchette".count)) : argument)
let database = try Database(
    name: url.lastPathComponent,
    config: DatabaseConfiguration(directory: url.deletingLastPathComponent().path))
let tasks = try await database.createCollection(name: "tasks")
let screen = Screen(
    model: try TodoViewModel(database: database, tasks: tasks),
    location: url.deletingLastPathComponent().path + "/" + url.lastPathComponent + ".couchette")

// The keyboard (or the pipe) is read on its own thread; lines reach the main actor through a stream.
let (lines, input) = AsyncStream.makeStream(of: String.self)
Thread { [input] in
    while let line = readLine() { input.yield(line) }
    input.finish()
}.start()

screen.render()
for await line in lines {
    guard await screen.handle(line) else { break }
}
try await database.close()
