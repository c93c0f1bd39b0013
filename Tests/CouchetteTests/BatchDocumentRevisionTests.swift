import Testing

@testable import Couchette

/// A batch holds none of the `MutableDocument`s saved in it (`BatchRevisions`): a document its
/// caller drops is freed at once, and one it keeps takes its new revision and sequence from the
/// batch when they are next read — after the commit, or never when the batch failed (saved again
/// in the next batch: `BatchLoopTests`).
@Suite(.tags(.concurrency, .sanitizeAddress)) struct BatchDocumentRevisionTests {
    struct Abort: Error {}

    @Test func aDocumentDroppedAfterItsSaveIsFreedBeforeTheCommit() async throws {
        try await withDatabase { database, _ in
            let collection = try database.defaultCollection()
            weak var dropped: MutableDocument?
            weak var droppedUpdate: MutableDocument?
            try await collection.save(document: MutableDocument(id: "stored").setInt(1, forKey: "n"))
            let stored = try #require(try await collection.document(id: "stored"))
            try await database.inBatch { batch in
                do {
                    let document = MutableDocument(id: "new").setString("milk", forKey: "title").setValue(["home"], forKey: "tags")
                    dropped = document
                    try batch.save(document: document, in: collection)
                    let update = stored.toMutable().setInt(2, forKey: "n")
                    droppedUpdate = update
                    try batch.save(document: update, in: collection, concurrencyControl: .failOnConflict)
                }
                #expect(dropped == nil)
                #expect(droppedUpdate == nil)
            }
            #expect(try await collection.document(id: "new")?.array(forKey: "tags")?.toArray() as? [String] == ["home"])
            #expect(try await collection.document(id: "stored")?.int(forKey: "n") == 2)
        }
    }

    @Test func aKeptDocumentLearnsItsRevisionWhenAskedAfterTheCommit() async throws {
        try await withDatabase { database, _ in
            let collection = try database.defaultCollection()
            try await collection.save(document: MutableDocument(id: "old").setInt(1, forKey: "n"))
            let update = try #require(try await collection.document(id: "old")).toMutable().setInt(2, forKey: "n")
            let created = (0..<3).map { MutableDocument(id: "new-\($0)").setInt($0, forKey: "n") }
            try await database.inBatch { batch in
                for document in created { try batch.save(document: document, in: collection) }
                try batch.save(document: update, in: collection)
                // Not committed yet: the documents still stand for what they were read as.
                #expect(created.allSatisfy { $0.revisionID == nil && $0.sequence == 0 })
                #expect(update.revisionID?.hasPrefix("1-") == true)
            }
            for document in created + [update] {
                let stored = try #require(try await collection.document(id: document.id))
                #expect(document.revisionID == stored.revisionID, "\(document.id)")
                #expect(document.sequence == stored.sequence, "\(document.id)")
            }
            #expect(update.revisionID?.hasPrefix("2-") == true)
        }
    }

    @Test func aDocumentSavedInAFailedBatchKeepsItsRevision() async throws {
        try await withDatabase { database, _ in
            let collection = try database.defaultCollection()
            try await collection.save(document: MutableDocument(id: "kept").setInt(1, forKey: "n"))
            let document = try #require(try await collection.document(id: "kept")).toMutable()
            let (revision, sequence) = (document.revisionID, document.sequence)
            let fresh = MutableDocument(id: "fresh")
            await #expect(throws: Abort.self) {
                try await database.inBatch { batch in
                    try batch.save(document: document.setInt(2, forKey: "n"), in: collection)
                    try batch.save(document: fresh, in: collection)
                    throw Abort()
                }
            }
            // A batch the writer refused (a stale base under .failOnConflict) is no different.
            try await collection.save(document: try #require(try await collection.document(id: "kept")).toMutable().setInt(5, forKey: "n"))
            await expectCouchetteError(.conflict) {
                try await database.inBatch { batch in
                    try batch.save(document: fresh, in: collection)
                    try batch.save(document: document.setInt(3, forKey: "n"), in: collection, concurrencyControl: .failOnConflict)
                }
            }
            #expect(document.revisionID == revision && document.sequence == sequence)
            #expect(fresh.revisionID == nil && fresh.sequence == 0)
            try await database.inBatch { batch in try batch.save(document: fresh, in: collection) }
            #expect(fresh.revisionID == (try await collection.document(id: "fresh"))?.revisionID)
        }
    }
}
