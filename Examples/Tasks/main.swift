// A small to-do list on Couchette: create, read, update with conflict handling, delete, batch.
// Run it with `swift run tasks-example [DIRECTORY]`.
import Couchette
import Foundation

let directory = CommandLine.arguments.dropFirst().first ?? FileManager.default.temporaryDirectory.path
let database = try Database(name: "tasks-example", config: DatabaseConfiguration(directory: directory))
let tasks = try await database.createCollection(name: "tasks")

// Create a few tasks in one transaction.
try await database.inBatch { batch in
    for title in ["Buy milk", "Walk the dog", "Book flights"] {
        let task = MutableDocument()
            .setString(title, forKey: "title")
            .setBoolean(false, forKey: "completed")
            .setDate(Date(), forKey: "createdAt")
        try batch.save(document: task, in: tasks)
    }
}
print("tasks: \(try await tasks.count)")

// Read one back, complete it, and save with a conflict handler that keeps other people's edits.
let buyMilk = MutableDocument(id: "buy-milk").setString("Buy milk", forKey: "title").setBoolean(false, forKey: "completed")
try await tasks.save(document: buyMilk)
if let stored = try await tasks.document(id: "buy-milk") {
    let edit = stored.toMutable().setBoolean(true, forKey: "completed")
    try await tasks.save(document: edit) { mine, current in
        // Someone else changed the task meanwhile: keep their title, apply our completion.
        mine.setString(current?.string(forKey: "title"), forKey: "title")
        return true
    }
    print("completed: \(try await tasks.document(id: "buy-milk")?.toJSON() ?? "missing")")
}

// Delete it, then clean up.
if let done = try await tasks.document(id: "buy-milk") {
    try await tasks.delete(document: done)
}
print("after delete: \(try await tasks.count) tasks")
try await database.delete()
