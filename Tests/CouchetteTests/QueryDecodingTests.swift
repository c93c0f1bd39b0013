import Foundation
import Testing

@testable import Couchette

/// `data(as:dataKey:)`: decoding query rows into models (the seed's "Decode Query Results").
@Suite(.tags(.sanitizeAddress, .sanitizeAddress)) struct QueryDecodingTests {
    struct Summary: Decodable, Equatable {
        var title: String
        var completed: Bool?
        var due: Date?
    }

    private func withTasks(_ body: (Database, Collection) async throws -> Void) async throws {
        try await withDatabase { db, _ in
            let tasks = try await db.createCollection(name: "tasks")
            for (title, completed) in [("Buy milk", true), ("Walk dog", false)] {
                try await tasks.save(from: TodoTask(title: title, completed: completed))
            }
            try await body(db, tasks)
        }
    }

    @Test func decodesRowsWithDocumentIDs() async throws {
        try await withTasks { db, tasks in
            let query = try db.createQuery("SELECT meta().id AS id, title, completed FROM _default.tasks ORDER BY title")
            let models = try await query.execute().data(as: TodoTask.self)
            #expect(models.map(\.title) == ["Buy milk", "Walk dog"])
            #expect(models.map(\.completed) == [true, false])
            for model in models {
                let id = try #require(model.id)
                #expect(try await tasks.document(id: id)?.string(forKey: "title") == model.title)
            }
            // A model decoded from a query can be saved back: the document is read at save time.
            let first = models[0]
            first.title = "Buy oat milk"
            try await tasks.save(from: first)
            #expect(try await tasks.document(id: first.id!)?.string(forKey: "title") == "Buy oat milk")
            #expect(try await tasks.count == 2)
        }
    }

    @Test func dataKeyReadsTheStarColumn() async throws {
        try await withTasks { db, _ in
            let results = try await db.createQuery("SELECT meta().id AS id, * AS data FROM _default.tasks WHERE completed = false")
                .execute()
            let one = try #require(results.allResults().first)
            let task = try one.data(as: TodoTask.self, dataKey: "data")
            #expect(task.title == "Walk dog" && task.completed == false)
            #expect(task.id == one.string(forKey: "id"))
            // Without the data key, the fields are not at the top level.
            let message = await expectCouchetteError(.invalidQuery) { _ = try one.data(as: TodoTask.self) }
            #expect(message?.contains("'title'") == true, "\(message ?? "")")
        }
    }

    @Test func valueTypesAndConversions() async throws {
        try await withDatabase { db, _ in
            let collection = try db.defaultCollection()
            try await collection.save(
                document: MutableDocument(id: "a").setString("Plan", forKey: "title")
                    .setDate(Date(timeIntervalSince1970: 1_700_000_000), forKey: "due"))
            let rows = try await db.createQuery("SELECT title, due, nothing AS completed FROM _").execute()
            #expect(
                try rows.data(as: Summary.self) == [Summary(title: "Plan", completed: nil, due: Date(timeIntervalSince1970: 1_700_000_000))]
            )
            let wrongType = try await db.createQuery("SELECT 5 AS title FROM _").execute()
            #expect(throws: DecodingError.self) { _ = try wrongType.data(as: Summary.self) }
        }
    }
}
