import Couchette
import Foundation

/// Couchette through its public API, as an application would use it.
public final class CouchetteEngine: BenchmarkEngine {
    public static let name = "couchette"
    let directory: String
    let database: Database
    let collection: Couchette.Collection

    public init(directory: String, durable: Bool) async throws {
        self.directory = directory
        var config = DatabaseConfiguration(directory: directory)
        config.fullSync = durable
        database = try Database(name: "bench", config: config)
        collection = try database.defaultCollection()
    }

    public func insertAll(_ documents: [DocumentGenerator.GeneratedDocument]) async throws {
        // JSON in bulk: what an application loading JSON would use (no MutableDocument each).
        let collection = self.collection
        try await database.inBatch { batch in
            for document in documents { try batch.save(id: document.id, json: document.json, in: collection) }
        }
    }

    public func insertBatches(_ nextBatch: () throws -> [DocumentGenerator.GeneratedDocument]?) async throws {
        // The bulk-loading loop: each batch commits while the next one is read and transcoded.
        let collection = self.collection
        try await database.inBatches { batch in
            guard let documents = try nextBatch() else { return false }
            for document in documents { try batch.save(id: document.id, json: document.json, in: collection) }
            return true
        }
    }

    public func saveEach(_ documents: [DocumentGenerator.GeneratedDocument], writers: Int) async throws {
        let collection = self.collection
        let shares = (0..<writers).map { writer in stride(from: writer, to: documents.count, by: writers).map { documents[$0] } }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for share in shares {
                group.addTask {
                    for document in share {
                        try await collection.save(document: try MutableDocument(id: document.id, json: document.json))
                    }
                }
            }
            try await group.waitForAll()
        }
    }

    public func readEach(_ ids: [String]) async throws -> Int {
        var keys = 0
        for id in ids {
            guard let document = try await collection.document(id: id) else { throw BenchmarkError.engine("couchette lost \(id)") }
            keys += document.toDictionary().count
        }
        return keys
    }

    public func incrementVisits(_ ids: [String], updated: [String: String]) async throws {
        var edits: [MutableDocument] = []
        edits.reserveCapacity(ids.count)
        for id in ids {
            guard let document = try await collection.document(id: id) else { throw BenchmarkError.engine("couchette lost \(id)") }
            edits.append(document.toMutable().setInt(document.int(forKey: "visits") + 1, forKey: "visits"))
        }
        let collection = self.collection
        try await database.inBatch { batch in
            for edit in edits { try batch.save(document: edit, in: collection) }
        }
    }

    public func contents() async throws -> [String: String] {
        let results = try await database.createQuery("SELECT meta().id AS id, * FROM _").execute()
        var contents: [String: String] = [:]
        for row in results {
            guard let id = row.string(forKey: "id"), let body = row.toDictionary()["_"] as? [String: Any] else { continue }
            contents[id] = canonicalJSON(body)
        }
        return contents
    }

    public func diskSize() throws -> UInt64 { directorySize(database.path) }

    public func close() async throws { try await database.close() }
}

extension CouchetteEngine {
    public func iterateAll() async throws -> Int {
        let results = try await database.createQuery("SELECT meta().id, * FROM _").execute()
        var count = 0
        for row in results where !row.toDictionary().isEmpty { count += 1 }
        return count
    }

    public func saveModels(_ tasks: [BenchTask]) async throws {
        let collection = self.collection
        try await database.inBatch { batch in
            for task in tasks { try batch.save(from: task, in: collection) }
        }
    }

    public func saveTaskDocuments(_ tasks: [BenchTask]) async throws {
        let collection = self.collection
        try await database.inBatch { batch in
            for task in tasks {
                let document = MutableDocument(id: task.id)
                    .setString(task.title, forKey: "title")
                    .setBoolean(task.completed, forKey: "completed")
                    .setInt(task.priority, forKey: "priority")
                    .setValue(task.tags, forKey: "tags")
                    .setDate(task.createdAt, forKey: "createdAt")
                try batch.save(document: document, in: collection)
            }
        }
    }

    public func readModels(_ ids: [String]) async throws -> Int {
        var total = 0
        for id in ids {
            guard let task = try await collection.document(id: id, as: BenchTask.self) else {
                throw BenchmarkError.engine("couchette lost \(id)")
            }
            total += task.priority
        }
        return total
    }
}
