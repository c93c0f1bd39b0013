import Testing

@testable import Couchette

@Suite struct CodableBatchTests {
    @Test func aBatchSavesModelsAndBindsThemAfterTheCommit() async throws {
        try await withDatabase { database, _ in
            let collection = try database.defaultCollection()
            let tasks = (0..<5).map { TodoTask(title: "task \($0)") }
            try await database.inBatch { batch in
                for task in tasks { try batch.save(from: task, in: collection) }
                // Ids are assigned after the commit, not while the body runs.
                #expect(tasks.allSatisfy { $0.id == nil })
            }
            #expect(try await collection.count == 5)
            #expect(Set(tasks.compactMap(\.id)).count == 5)
            for task in tasks {
                #expect(try await collection.document(id: task.id!, as: TodoTask.self)?.title == task.title)
                #expect(try boundRevision(of: task)?.hasPrefix("1-") == true)
            }
        }
    }

    @Test func anObjectSavedTwiceInABatchGetsOneIdAndItsLastRevision() async throws {
        try await withDatabase { database, _ in
            let collection = try database.defaultCollection()
            let task = TodoTask(title: "first")
            try await database.inBatch { batch in
                try batch.save(from: task, in: collection, concurrencyControl: .failOnConflict)
                task.title = "second"
                try batch.save(from: task, in: collection, concurrencyControl: .failOnConflict)
            }
            #expect(try await collection.count == 1)
            let stored = try #require(try await collection.document(id: task.id!))
            #expect(stored.string(forKey: "title") == "second")
            #expect(stored.revisionID?.hasPrefix("2-") == true)
            #expect(try boundRevision(of: task) == stored.revisionID)
        }
    }

    @Test func aBoundObjectWrittenTwiceWithFailOnConflictBuildsOnItsFirstWrite() async throws {
        try await withDatabase { database, _ in
            let collection = try database.defaultCollection()
            let task = TodoTask(title: "v1")
            try await collection.save(from: task)
            try await database.inBatch { batch in
                task.title = "v2"
                try batch.save(from: task, in: collection, concurrencyControl: .failOnConflict)
                try batch.delete(for: task, in: collection, concurrencyControl: .failOnConflict)
            }
            #expect(try await collection.document(id: task.id!) == nil)
            #expect(try boundRevision(of: task)?.hasPrefix("3-") == true)  // the tombstone
        }
    }

    @Test func aStaleModelWithFailOnConflictFailsTheWholeBatch() async throws {
        try await withDatabase { database, _ in
            let collection = try database.defaultCollection()
            try await collection.save(from: Checklist(id: "list", name: "v1"))
            let stale = try #require(try await collection.document(id: "list", as: Checklist.self))
            let staleRevision = try boundRevision(of: stale)
            let fresh = try #require(try await collection.document(id: "list", as: Checklist.self))
            fresh.name = "v2"
            try await collection.save(from: fresh)

            let bystander = TodoTask(title: "bystander")
            stale.name = "stale"
            await expectCouchetteError(.conflict) {
                try await database.inBatch { batch in
                    try batch.save(from: bystander, in: collection)
                    try batch.save(from: stale, in: collection, concurrencyControl: .failOnConflict)
                }
            }
            #expect(try await collection.count == 1)
            #expect(try await collection.document(id: "list", as: Checklist.self)?.name == "v2")
            #expect(bystander.id == nil)
            #expect(try boundRevision(of: stale) == staleRevision)
        }
    }

    @Test func aBatchDeletesModels() async throws {
        try await withDatabase { database, _ in
            let collection = try database.defaultCollection()
            let keep = TodoTask(title: "keep")
            let drop = TodoTask(title: "drop")
            try await collection.save(from: keep)
            try await collection.save(from: drop)
            try await database.inBatch { batch in try batch.delete(for: drop, in: collection) }
            #expect(try await collection.count == 1)
            #expect(try await collection.document(id: drop.id!) == nil)
            // An object that was never saved (and not in this batch) has nothing to delete.
            await expectCouchetteError(.notFound) {
                try await database.inBatch { batch in try batch.delete(for: TodoTask(title: "new"), in: collection) }
            }
        }
    }

    @Test func encodingErrorsSurfaceInsideTheBody() async throws {
        final class Sensor: Codable {
            @DocumentID var id: String?
            var reading = Double.nan
        }
        try await withDatabase { database, _ in
            let collection = try database.defaultCollection()
            var thrownInBody = false
            await expectCouchetteError(.invalidParameter) {
                try await database.inBatch { batch in
                    do {
                        try batch.save(from: Sensor(), in: collection)
                    } catch {
                        thrownInBody = true
                        throw error
                    }
                }
            }
            #expect(thrownInBody)
            #expect(try await collection.count == 0)
        }
    }

    @Test func aBatchCannotBeUsedAfterItsBody() async throws {
        try await withDatabase { database, _ in
            let collection = try database.defaultCollection()
            let escaped = try await database.inBatch { $0 }
            await expectCouchetteError(.invalidParameter) { try escaped.save(from: TodoTask(title: "late"), in: collection) }
        }
    }
}
