import Testing

@testable import Couchette

@Suite(.tags(.concurrency)) struct ConcurrencyControlTests {
    @Test func failOnConflictRefusesAStaleDocument() async throws {
        try await withDatabase { database, _ in
            let collection = try database.defaultCollection()
            try await collection.save(document: MutableDocument(id: "d").setInt(1, forKey: "v"))
            let copyA = try #require(try await collection.document(id: "d")).toMutable()
            let copyB = try #require(try await collection.document(id: "d")).toMutable()
            #expect(try await collection.save(document: copyA.setInt(2, forKey: "v"), concurrencyControl: .failOnConflict))
            #expect(try await !collection.save(document: copyB.setInt(3, forKey: "v"), concurrencyControl: .failOnConflict))
            #expect(try await collection.document(id: "d")?.int(forKey: "v") == 2)
            // Last write wins overwrites regardless.
            #expect(try await collection.save(document: copyB, concurrencyControl: .lastWriteWins))
            #expect(try await collection.document(id: "d")?.int(forKey: "v") == 3)
            #expect(copyB.revisionID?.hasPrefix("3-") == true)
        }
    }

    @Test func aNewDocumentWhoseIdExistsConflicts() async throws {
        try await withDatabase { database, _ in
            let collection = try database.defaultCollection()
            try await collection.save(document: MutableDocument(id: "taken"))
            #expect(try await !collection.save(document: MutableDocument(id: "taken"), concurrencyControl: .failOnConflict))
            // ...but may replace a tombstone.
            try await collection.delete(document: try #require(try await collection.document(id: "taken")))
            #expect(try await collection.save(document: MutableDocument(id: "taken"), concurrencyControl: .failOnConflict))
        }
    }

    @Test func deleteWithFailOnConflict() async throws {
        try await withDatabase { database, _ in
            let collection = try database.defaultCollection()
            try await collection.save(document: MutableDocument(id: "d"))
            let stale = try #require(try await collection.document(id: "d"))
            try await collection.save(document: stale.toMutable().setInt(1, forKey: "v"))
            #expect(try await !collection.delete(document: stale, concurrencyControl: .failOnConflict))
            #expect(try await collection.document(id: "d") != nil)
            let fresh = try #require(try await collection.document(id: "d"))
            #expect(try await collection.delete(document: fresh, concurrencyControl: .failOnConflict))
            #expect(try await collection.document(id: "d") == nil)
        }
    }

    @Test func conflictHandlerMergesWithTheStoredDocument() async throws {
        try await withDatabase { database, _ in
            let collection = try database.defaultCollection()
            try await collection.save(document: MutableDocument(id: "d").setInt(1, forKey: "a").setInt(1, forKey: "b"))
            let mine = try #require(try await collection.document(id: "d")).toMutable().setInt(2, forKey: "a")
            let theirs = try #require(try await collection.document(id: "d")).toMutable().setInt(2, forKey: "b")
            try await collection.save(document: theirs)
            var calls = 0
            let saved = try await collection.save(document: mine) { mine, stored in
                calls += 1
                mine.setInt(stored?.int(forKey: "b") ?? 0, forKey: "b")
                return true
            }
            #expect(saved)
            #expect(calls == 1)
            let merged = try #require(try await collection.document(id: "d"))
            #expect(merged.int(forKey: "a") == 2)
            #expect(merged.int(forKey: "b") == 2)
            #expect(merged.revisionID?.hasPrefix("3-") == true)
        }
    }

    @Test func conflictHandlerIsNotCalledWithoutAConflict() async throws {
        try await withDatabase { database, _ in
            let collection = try database.defaultCollection()
            var calls = 0
            #expect(
                try await collection.save(document: MutableDocument(id: "n")) { _, _ in
                    calls += 1; return true
                })
            #expect(calls == 0)
        }
    }

    @Test func conflictHandlerReturningFalseCancels() async throws {
        try await withDatabase { database, _ in
            let collection = try database.defaultCollection()
            try await collection.save(document: MutableDocument(id: "d").setInt(1, forKey: "v"))
            let stale = try #require(try await collection.document(id: "d")).toMutable()
            try await collection.save(document: try #require(try await collection.document(id: "d")).toMutable().setInt(2, forKey: "v"))
            #expect(try await !collection.save(document: stale.setInt(9, forKey: "v")) { _, _ in false })
            #expect(try await collection.document(id: "d")?.int(forKey: "v") == 2)
        }
    }

    @Test func conflictHandlerSeesNilForADeletedDocument() async throws {
        try await withDatabase { database, _ in
            let collection = try database.defaultCollection()
            try await collection.save(document: MutableDocument(id: "d").setInt(1, forKey: "v"))
            let stale = try #require(try await collection.document(id: "d")).toMutable()
            try await collection.delete(document: try #require(try await collection.document(id: "d")))
            var sawNil = false
            #expect(
                try await collection.save(document: stale) { _, stored in
                    sawNil = stored == nil
                    return true
                })
            #expect(sawNil)
            #expect(try await collection.document(id: "d")?.int(forKey: "v") == 1)
        }
    }

    @Test func conflictHandlerErrorsPropagate() async throws {
        struct Refused: Error {}
        try await withDatabase { database, _ in
            let collection = try database.defaultCollection()
            try await collection.save(document: MutableDocument(id: "d"))
            await #expect(throws: Refused.self) {
                try await collection.save(document: MutableDocument(id: "d")) { _, _ in throw Refused() }
            }
        }
    }

    @Test func eightTasksIncrementingOneCounterLoseNoUpdate() async throws {
        try await withDatabase { database, _ in
            let collection = try database.defaultCollection()
            try await collection.save(document: MutableDocument(id: "counter").setInt(0, forKey: "n"))
            try await withThrowingTaskGroup(of: Void.self) { group in
                for _ in 0..<8 {
                    group.addTask {
                        for _ in 0..<500 {
                            let current = try #require(try await collection.document(id: "counter"))
                            let edit = current.toMutable().setInt(current.int(forKey: "n") + 1, forKey: "n")
                            try await collection.save(document: edit) { mine, stored in
                                mine.setInt((stored?.int(forKey: "n") ?? 0) + 1, forKey: "n")
                                return true
                            }
                        }
                    }
                }
                try await group.waitForAll()
            }
            #expect(try await collection.document(id: "counter")?.int(forKey: "n") == 4000)
        }
    }
}
