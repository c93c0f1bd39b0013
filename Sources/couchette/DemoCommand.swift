import Couchette
import Foundation

/// `couchette demo`: a guided tour in a temporary folder.
enum DemoCommand {
    static let command = Command(
        name: "demo", summary: "Create a database in a temporary folder and show what Couchette does",
        options: [.init(name: "keep", valueName: nil, help: "keep the database folder afterwards")]
    ) { arguments in
        try await run(keep: arguments.flags.contains("keep"))
    }

    static func run(keep: Bool) async throws {
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("couchette-demo-\(ProcessInfo.processInfo.processIdentifier)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { if !keep { try? FileManager.default.removeItem(atPath: directory) } }

        let database = try Database(name: "demo", config: DatabaseConfiguration(directory: directory))
        print("Opened database '\(database.name)' at \(database.path)")
        let tasks = try await database.createCollection(name: "tasks")
        print("Created collection \(tasks.fullName)")

        let titles = ["Buy milk", "Write the report", "Call Ann", "Water the plants"]
        try await database.inBatch { batch in
            for (index, title) in titles.enumerated() {
                let document = MutableDocument(id: "task-\(index + 1)")
                    .setString(title, forKey: "title")
                    .setBoolean(false, forKey: "completed")
                    .setDate(Date(), forKey: "createdAt")
                try batch.save(document: document, in: tasks)
            }
        }
        print("Saved \(titles.count) tasks in one batch; the collection holds \(try await tasks.count) documents")

        let open = try database.createQuery(
            "SELECT META().id AS id, title FROM _default.tasks WHERE completed = $done ORDER BY title")
        open.parameters = Parameters().setBoolean(false, forName: "done")
        print("SQL++: \(open.text)  ($done = false)")
        for row in try await open.execute() { print("  \(row.toJSON())") }

        guard let first = try await tasks.document(id: "task-1") else { throw DemoError("task-1 vanished") }
        print("Read task-1 at revision \(first.revisionID ?? "?"): \(first.toJSON())")

        let edit = first.toMutable().setBoolean(true, forKey: "completed")
        try await tasks.save(document: edit)
        print("Completed task-1: now revision \(edit.revisionID ?? "?")")

        let stale = first.toMutable().setString("Buy oat milk", forKey: "title")
        let saved = try await tasks.save(document: stale, concurrencyControl: .failOnConflict)
        print("Saving a stale copy with .failOnConflict: \(saved ? "saved" : "refused (conflict)")")

        let merged = try await tasks.save(document: stale) { mine, stored in
            mine.setBoolean(stored?.bool(forKey: "completed") ?? false, forKey: "completed")
            return true
        }
        if merged, let current = try await tasks.document(id: "task-1") {
            print("Merged with a conflict handler: \(current.toJSON()) at \(current.revisionID ?? "?")")
        }

        if let second = try await tasks.document(id: "task-2") {
            try await tasks.delete(document: second)
            print("Deleted task-2; reading it now gives \(try await tasks.document(id: "task-2") == nil ? "nil" : "a document")")
        }
        try await tasks.purge(id: "task-3")
        print("Purged task-3; \(try await tasks.count) tasks remain")

        let summary = try database.createQuery(
            "SELECT completed, COUNT(*) AS tasks FROM _default.tasks GROUP BY completed ORDER BY completed")
        print("SQL++: \(summary.text)")
        for row in try await summary.execute() { print("  \(row.toJSON())") }

        try await tasks.setDocumentExpiration(id: "task-4", expiration: Date().addingTimeInterval(0.2))
        try await Task.sleep(for: .milliseconds(400))
        print("task-4 expired after 0.2 s: \(try await tasks.document(id: "task-4") == nil ? "gone" : "still there")")

        try await showLiveQuery(database: database, tasks: tasks)
        try await showIndex(database: database, tasks: tasks)
        try await showReplication(database: database, tasks: tasks, directory: directory)

        try await database.close()
        let reopened = try Database(name: "demo", config: DatabaseConfiguration(directory: directory))
        let count = try await reopened.collection(name: "tasks")?.count ?? 0
        print("Reopened the database: \(count) task(s) persisted")
        try await reopened.close()
        print(keep ? "Kept the database at \(directory)" : "Done; removed \(directory)")
    }
}

extension DemoCommand {
    /// A live query printing the open tasks each time a write changes them.
    static func showLiveQuery(database: Database, tasks: Collection) async throws {
        let query = try database.createQuery(
            "SELECT meta().id AS id, title FROM tasks WHERE completed = false ORDER BY title")
        var changes = query.changes().makeAsyncIterator()  // registered now: nothing is missed
        func printNext(_ caption: String) async {
            guard let change = await changes.next() else { return }
            let titles = change.results?.map { $0.string(forKey: "title") ?? "?" } ?? []
            print(
                "Live query (\(caption)): \(change.error.map { "error \($0)" } ?? (titles.isEmpty ? "(no open task)" : titles.joined(separator: ", ")))"
            )
        }
        await printNext("initial results")
        try await tasks.save(
            document: MutableDocument(id: "task-5").setString("Book the trip", forKey: "title")
                .setBoolean(false, forKey: "completed"))
        await printNext("after adding task-5")
        if let trip = try await tasks.document(id: "task-5") {
            try await tasks.save(document: trip.toMutable().setBoolean(true, forKey: "completed"))
        }
        await printNext("after completing task-5")
    }
}

extension DemoCommand {
    /// An index on `title`, and the plan that uses it.
    static func showIndex(database: Database, tasks: Collection) async throws {
        try await tasks.createIndex(withName: "byTitle", config: ValueIndexConfiguration(["title"]))
        let query = try database.createQuery("SELECT title FROM tasks WHERE title LIKE 'Buy%' ORDER BY title")
        let plan = try await query.explain().split(separator: "\n").first.map(String.init) ?? ""
        print("Index byTitle: \(plan)")
    }

    /// Pushes the tasks to a second database in this process and reads one back there.
    static func showReplication(database: Database, tasks: Collection, directory: String) async throws {
        let backup = try Database(name: "backup", config: DatabaseConfiguration(directory: directory))
        var config = ReplicatorConfiguration(target: DatabaseEndpoint(database: backup))
        config.addCollection(tasks)
        config.replicatorType = .push
        let replicator = try Replicator(config: config)
        let changes = replicator.changes()
        await replicator.start()
        var started = false  // the stream starts with the status before start(): stopped
        for await change in changes {
            guard change.status.activity == .stopped else { started = true; continue }
            guard started else { continue }
            if let error = change.status.error { throw DemoError("replication failed: \(error)") }
            break
        }
        let copied = try await backup.collection(name: "tasks")?.count ?? 0
        print("Replicated to a second database: \(copied) task(s) there")
        try await backup.close()
    }
}

struct DemoError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
