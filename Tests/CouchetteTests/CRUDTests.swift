import Foundation
import Testing

@testable import Couchette

@Suite(.tags(.concurrency, .sanitizeAddress)) struct CRUDTests {
    @Test func saveReadUpdateDelete() async throws {
        try await withDatabase { database, _ in
            let collection = try database.defaultCollection()
            let document = MutableDocument(id: "doc1").setString("Ann", forKey: "name").setInt(30, forKey: "age")
            #expect(document.revisionID == nil)
            try await collection.save(document: document)
            let firstRevision = try #require(document.revisionID)
            #expect(firstRevision.hasPrefix("1-"))
            #expect(document.sequence == 1)

            let stored = try #require(try await collection.document(id: "doc1"))
            #expect(stored.string(forKey: "name") == "Ann")
            #expect(stored.int(forKey: "age") == 30)
            #expect(stored.revisionID == firstRevision)
            #expect(stored.sequence == 1)
            #expect(try await collection.count == 1)

            let edit = stored.toMutable().setInt(31, forKey: "age")
            try await collection.save(document: edit)
            #expect(edit.revisionID?.hasPrefix("2-") == true)
            #expect(edit.sequence == 2)
            #expect(try await collection.document(id: "doc1")?.int(forKey: "age") == 31)

            let latest = try #require(try await collection.document(id: "doc1"))
            try await collection.delete(document: latest)
            #expect(try await collection.document(id: "doc1") == nil)
            #expect(try await collection.count == 0)
            let tree = try database.reader.read { try $0.revisionTree(collection.spec, "doc1") }
            #expect(tree.winner?.isDeleted == true)
            #expect(tree.winner?.revisionID.hasPrefix("3-") == true)
        }
    }

    @Test func aDeletedDocumentCanBeRecreated() async throws {
        try await withDatabase { database, _ in
            let collection = try database.defaultCollection()
            try await collection.save(document: MutableDocument(id: "a").setInt(1, forKey: "v"))
            try await collection.delete(document: try #require(try await collection.document(id: "a")))
            try await collection.save(document: MutableDocument(id: "a").setInt(2, forKey: "v"))
            let revived = try #require(try await collection.document(id: "a"))
            #expect(revived.int(forKey: "v") == 2)
            #expect(revived.revisionID?.hasPrefix("3-") == true)
            #expect(try await collection.count == 1)
        }
    }

    @Test func missingDocumentsThrowNotFoundWhereAnOperationNeedsThem() async throws {
        try await withDatabase { database, _ in
            let collection = try database.defaultCollection()
            #expect(try await collection.document(id: "nope") == nil)
            let message = await expectCouchetteError(.notFound) { try await collection.purge(id: "nope") }
            #expect(message?.contains("nope") == true)
            let ghost = Document(MutableDocument(id: "ghost"))
            await expectCouchetteError(.notFound) { try await collection.delete(document: ghost) }
        }
    }

    @Test func purgeRemovesEveryTrace() async throws {
        try await withDatabase { database, _ in
            let collection = try database.defaultCollection()
            try await collection.save(document: MutableDocument(id: "p").setString("x", forKey: "k"))
            try await collection.purge(document: try #require(try await collection.document(id: "p")))
            #expect(try await collection.document(id: "p") == nil)
            #expect(try await collection.count == 0)
            let traces = try database.reader.read { snapshot in
                (try snapshot.record(collection.spec, "p"), try snapshot.revisionTree(collection.spec, "p"))
            }
            #expect(traces.0 == nil)
            #expect(traces.1.isEmpty)
            // A purged id starts over at generation 1.
            let again = MutableDocument(id: "p")
            try await collection.save(document: again)
            #expect(again.revisionID?.hasPrefix("1-") == true)
            // Tombstones can be purged too.
            try await collection.delete(document: try #require(try await collection.document(id: "p")))
            try await collection.purge(id: "p")
            try await database.performMaintenance(type: .integrityCheck)
        }
    }

    @Test func sequencesIncreasePerCollection() async throws {
        try await withDatabase { database, _ in
            let a = try database.defaultCollection()
            let b = try await database.createCollection(name: "b")
            var sequences: [UInt64] = []
            for index in 0..<5 {
                let document = MutableDocument(id: "d\(index)")
                try await a.save(document: document)
                sequences.append(document.sequence)
            }
            #expect(sequences == [1, 2, 3, 4, 5])
            let other = MutableDocument(id: "x")
            try await b.save(document: other)
            #expect(other.sequence == 1)
        }
    }

    @Test func generatedIdsAreUsedWhenNoneIsGiven() async throws {
        try await withDatabase { database, _ in
            let collection = try database.defaultCollection()
            let document = MutableDocument().setString("v", forKey: "k")
            try await collection.save(document: document)
            #expect(try await collection.document(id: document.id)?.string(forKey: "k") == "v")
        }
    }

    @Test func invalidDocumentIdsAreRejected() async throws {
        try await withDatabase { database, _ in
            let collection = try database.defaultCollection()
            await expectCouchetteError(.invalidParameter) { try await collection.save(document: MutableDocument(id: "")) }
            await expectCouchetteError(.invalidParameter) {
                try await collection.save(document: MutableDocument(id: String(repeating: "x", count: 481)))
            }
        }
    }

    @Test func readsDoNotWaitForTheWriter() async throws {
        try await withDatabase { database, _ in
            let collection = try database.defaultCollection()
            try await collection.save(document: MutableDocument(id: "r").setInt(0, forKey: "n"))
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask {
                    for index in 1...200 { try await collection.save(document: MutableDocument(id: "w\(index)")) }
                }
                for _ in 0..<4 {
                    group.addTask {
                        for _ in 0..<500 {
                            let value = try await collection.document(id: "r")?.int(forKey: "n")
                            #expect(value == 0)
                        }
                    }
                }
                try await group.waitForAll()
            }
            #expect(try await collection.count == 201)
        }
    }

    @Test func everyCommitReportsWhichDocumentsItChanged() async throws {
        try await withDatabase { database, _ in
            let tasks = try await database.createCollection(name: "tasks")
            let observed = Observed()
            let token = database.observation.observers.add { observed.append($0) }
            try await tasks.save(document: MutableDocument(id: "a"))
            try await database.inBatch { batch in
                for index in 0..<10 { try batch.save(document: MutableDocument(id: "b\(index)"), in: tasks) }
            }
            try await tasks.purge(id: "a")
            database.observation.observers.remove(token)
            try await tasks.save(document: MutableDocument(id: "after"))
            let summaries = observed.all
            #expect(summaries.count == 3)
            #expect(summaries.map { $0.documentIDs[tasks.spec] ?? [] } == [["a"], (0..<10).map { "b\($0)" }, ["a"]])
            #expect(database.observation.observers.count == 0)
        }
    }
}
