import Testing

@testable import Couchette

@Suite(.tags(.concurrency)) struct BatchTests {
    struct Abort: Error {}

    @Test func aBatchCommitsEverythingInOneTransaction() async throws {
        try await withDatabase { database, _ in
            let collection = try database.defaultCollection()
            let documents = (0..<10).map { MutableDocument(id: "b\($0)").setInt($0, forKey: "n") }
            let returned = try await database.inBatch { batch in
                for document in documents { try batch.save(document: document, in: collection) }
                return "done"
            }
            #expect(returned == "done")
            #expect(try await collection.count == 10)
            #expect(documents.allSatisfy { $0.revisionID?.hasPrefix("1-") == true })
            #expect(Set(documents.map(\.sequence)) == Set(1...10))
        }
    }

    @Test func aThrowInsideTheBodyWritesNothing() async throws {
        try await withDatabase { database, _ in
            let collection = try database.defaultCollection()
            await #expect(throws: Abort.self) {
                try await database.inBatch { batch in
                    try batch.save(document: MutableDocument(id: "x"), in: collection)
                    throw Abort()
                }
            }
            #expect(try await collection.count == 0)
        }
    }

    @Test func anErrorInAnyWriteUndoesTheWholeBatch() async throws {
        try await withDatabase { database, _ in
            let collection = try database.defaultCollection()
            await expectCouchetteError(.notFound) {
                try await database.inBatch { batch in
                    try batch.save(document: MutableDocument(id: "kept?"), in: collection)
                    try batch.purge(id: "missing", in: collection)
                }
            }
            #expect(try await collection.document(id: "kept?") == nil)
        }
    }

    @Test func aFailOnConflictWriteFailsTheWholeBatch() async throws {
        try await withDatabase { database, _ in
            let collection = try database.defaultCollection()
            try await collection.save(document: MutableDocument(id: "a").setInt(1, forKey: "v"))
            let stale = try #require(try await collection.document(id: "a")).toMutable()
            try await collection.save(document: try #require(try await collection.document(id: "a")).toMutable().setInt(2, forKey: "v"))
            let message = await expectCouchetteError(.conflict) {
                try await database.inBatch { batch in
                    try batch.save(document: MutableDocument(id: "new"), in: collection)
                    try batch.save(document: stale.setInt(3, forKey: "v"), in: collection, concurrencyControl: .failOnConflict)
                }
            }
            #expect(message?.contains("'a'") == true)
            #expect(try await collection.document(id: "new") == nil)
            #expect(try await collection.document(id: "a")?.int(forKey: "v") == 2)
            #expect(stale.revisionID?.hasPrefix("1-") == true)
        }
    }

    @Test func batchesSpanCollectionsAndMixOperations() async throws {
        try await withDatabase { database, _ in
            let a = try database.defaultCollection()
            let b = try await database.createCollection(name: "b", scope: "s")
            try await a.save(document: MutableDocument(id: "old"))
            let old = try #require(try await a.document(id: "old"))
            try await database.inBatch { batch in
                try batch.save(document: MutableDocument(id: "x"), in: a)
                try batch.save(document: MutableDocument(id: "y"), in: b)
                try batch.delete(document: old, in: a)
            }
            #expect(try await a.count == 1)
            #expect(try await b.count == 1)
        }
    }

    @Test func aBatchCannotBeUsedOutsideItsBody() async throws {
        try await withDatabase { database, _ in
            let collection = try database.defaultCollection()
            let escaped = try await database.inBatch { $0 }
            await expectCouchetteError(.invalidParameter) {
                try escaped.save(document: MutableDocument(id: "late"), in: collection)
            }
        }
    }

    @Test func collectionsOfAnotherDatabaseAreRejected() async throws {
        let directory = try TemporaryDirectory()
        let one = try directory.open("one")
        let two = try directory.open("two")
        let foreign = try two.defaultCollection()
        await expectCouchetteError(.invalidParameter) {
            try await one.inBatch { try $0.save(document: MutableDocument(id: "x"), in: foreign) }
        }
        try await one.close()
        try await two.close()
    }
}

@Suite struct BatchRepeatedWriteTests {
    @Test func aDocumentSavedTwiceInOneBatchBuildsOnItsFirstWrite() async throws {
        try await withDatabase { database, _ in
            let collection = try database.defaultCollection()
            try await collection.save(document: MutableDocument(id: "d").setInt(1, forKey: "v"))
            let document = try #require(try await collection.document(id: "d")).toMutable()
            try await database.inBatch { batch in
                try batch.save(document: document.setInt(2, forKey: "v"), in: collection, concurrencyControl: .failOnConflict)
                try batch.save(document: document.setInt(3, forKey: "v"), in: collection, concurrencyControl: .failOnConflict)
            }
            let stored = try #require(try await collection.document(id: "d"))
            #expect(stored.int(forKey: "v") == 3)
            #expect(stored.revisionID?.hasPrefix("3-") == true)
            #expect(document.revisionID == stored.revisionID)
        }
    }

    @Test func aStaleDocumentStillFailsTheBatchOnItsFirstWrite() async throws {
        try await withDatabase { database, _ in
            let collection = try database.defaultCollection()
            try await collection.save(document: MutableDocument(id: "d").setInt(1, forKey: "v"))
            let stale = try #require(try await collection.document(id: "d")).toMutable()
            try await collection.save(document: try #require(try await collection.document(id: "d")).toMutable().setInt(9, forKey: "v"))
            await expectCouchetteError(.conflict) {
                try await database.inBatch { batch in
                    try batch.save(document: stale.setInt(2, forKey: "v"), in: collection, concurrencyControl: .failOnConflict)
                    try batch.save(document: stale.setInt(3, forKey: "v"), in: collection, concurrencyControl: .failOnConflict)
                }
            }
            #expect(try await collection.document(id: "d")?.int(forKey: "v") == 9)
        }
    }
}
