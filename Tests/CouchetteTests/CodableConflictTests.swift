import Foundation
import Testing

@testable import Couchette

@Suite struct CodableConflictTests {
    /// Saves `first` to a fresh document "list", then reads it twice: two copies bound to the same
    /// revision.
    private func twoStaleCopies(in collection: Collection) async throws -> (Checklist, Checklist) {
        try await collection.save(from: Checklist(id: "list", name: "groceries", items: ["milk"]))
        let copyA = try #require(try await collection.document(id: "list", as: Checklist.self))
        let copyB = try #require(try await collection.document(id: "list", as: Checklist.self))
        #expect(try boundRevision(of: copyA) == (try boundRevision(of: copyB)))
        return (copyA, copyB)
    }

    /// Commits a save directly in a write transaction, as another writer of the file (a store of
    /// its own on the same tables) would, while the caller is inside a (synchronous) conflict handler.
    private func writeUnderneath(_ collection: Collection, id: String, json: String) throws {
        let body = try ValueEncoder.encode(JSON.parse(json))
        let environment = collection.core.environment
        let store = DocumentStore(tables: environment.tables, indexes: IndexRegistry(tables: environment.tables))
        try environment.write { txn in
            let context = WriteContext(
                txn: txn, tables: environment.tables, now: SystemClock().nowMilliseconds(),
                collections: [collection.spec.number: collection.spec])
            _ = try store.apply(.save(collection.spec, id: id, body: body, base: nil, control: .lastWriteWins), in: context)
            try context.flush()
        }
    }

    // MARK: - The three modes, with two stale copies

    @Test func lastWriteWinsOverwritesWithTheStaleCopy() async throws {
        try await withDatabase { database, _ in
            let collection = try database.defaultCollection()
            let (copyA, copyB) = try await twoStaleCopies(in: collection)
            copyA.items.append("eggs")
            copyB.items.append("bread")
            try await collection.save(from: copyA)
            try await collection.save(from: copyB)
            let stored = try #require(try await collection.document(id: "list", as: Checklist.self))
            #expect(stored.items == ["milk", "bread"])
            #expect(try boundRevision(of: copyB)?.hasPrefix("3-") == true)
        }
    }

    @Test func failOnConflictRefusesTheStaleCopyAndLeavesItAlone() async throws {
        try await withDatabase { database, _ in
            let collection = try database.defaultCollection()
            let (copyA, copyB) = try await twoStaleCopies(in: collection)
            let staleRevision = try boundRevision(of: copyB)
            copyA.items.append("eggs")
            copyB.items.append("bread")
            #expect(try await collection.save(from: copyA, concurrencyControl: .failOnConflict))
            #expect(try await !collection.save(from: copyB, concurrencyControl: .failOnConflict))
            #expect(try await collection.document(id: "list", as: Checklist.self)?.items == ["milk", "eggs"])
            #expect(try boundRevision(of: copyB) == staleRevision)
            #expect(copyB.items == ["milk", "bread"])
            #expect(try await collection.document(id: "list")?.revisionID?.hasPrefix("2-") == true)
        }
    }

    @Test func theConflictHandlerMergesIntoTheCallersObject() async throws {
        try await withDatabase { database, _ in
            let collection = try database.defaultCollection()
            let (copyA, copyB) = try await twoStaleCopies(in: collection)
            copyA.items.append("eggs")
            copyB.items.append("bread")
            try await collection.save(from: copyA)
            var calls = 0
            let saved = try await collection.save(from: copyB) { mine, stored in
                calls += 1
                #expect(mine === copyB)
                #expect(stored !== copyA)
                #expect(stored?.id == "list")
                #expect(stored?.items == ["milk", "eggs"])
                mine.items = (stored?.items ?? []) + ["bread"]
                return true
            }
            #expect(saved)
            #expect(calls == 1)
            #expect(copyB.items == ["milk", "eggs", "bread"])  // the merge stays on the caller's object
            let stored = try #require(try await collection.document(id: "list"))
            #expect(stored.revisionID?.hasPrefix("3-") == true)
            #expect(stored.revisionID == (try boundRevision(of: copyB)))
            #expect(try await collection.document(id: "list", as: Checklist.self)?.items == ["milk", "eggs", "bread"])
        }
    }

    @Test func theConflictHandlerIsNotCalledWithoutAConflict() async throws {
        try await withDatabase { database, _ in
            let collection = try database.defaultCollection()
            let (copyA, _) = try await twoStaleCopies(in: collection)
            var calls = 0
            #expect(
                try await collection.save(from: copyA) { _, _ in
                    calls += 1; return true
                })
            #expect(
                try await collection.save(from: Checklist(name: "new")) { _, _ in
                    calls += 1; return true
                })
            #expect(calls == 0)
        }
    }

    @Test func aHandlerReturningFalseChangesNothing() async throws {
        try await withDatabase { database, _ in
            let collection = try database.defaultCollection()
            let (copyA, copyB) = try await twoStaleCopies(in: collection)
            let staleRevision = try boundRevision(of: copyB)
            copyA.name = "A"
            try await collection.save(from: copyA)
            copyB.name = "B"
            #expect(try await !collection.save(from: copyB) { _, _ in false })
            #expect(try await collection.document(id: "list", as: Checklist.self)?.name == "A")
            #expect(try boundRevision(of: copyB) == staleRevision)
            #expect(copyB.name == "B")
        }
    }

    @Test func theHandlerSeesNilForADeletedDocumentAndCanResurrectIt() async throws {
        try await withDatabase { database, _ in
            let collection = try database.defaultCollection()
            let (copyA, copyB) = try await twoStaleCopies(in: collection)
            try await collection.delete(for: copyA)
            var sawNil = false
            #expect(
                try await collection.save(from: copyB) { _, stored in
                    sawNil = stored == nil
                    return true
                })
            #expect(sawNil)
            #expect(try await collection.document(id: "list", as: Checklist.self)?.items == ["milk"])
        }
    }

    @Test func theHandlerRunsAgainWhenTheDocumentChangesUnderneath() async throws {
        try await withDatabase { database, _ in
            let collection = try database.defaultCollection()
            let (copyA, copyB) = try await twoStaleCopies(in: collection)
            copyA.items.append("eggs")
            try await collection.save(from: copyA)
            var seen: [[String]] = []
            let saved = try await collection.save(from: copyB) { mine, stored in
                seen.append(stored?.items ?? [])
                if seen.count == 1 {
                    // Someone else commits while we merge: our save must not overwrite it.
                    try writeUnderneath(collection, id: "list", json: #"{"name": "groceries", "items": ["milk", "eggs", "jam"]}"#)
                }
                mine.items = (stored?.items ?? []) + ["bread"]
                return true
            }
            #expect(saved)
            #expect(seen == [["milk", "eggs"], ["milk", "eggs", "jam"]])
            #expect(try await collection.document(id: "list", as: Checklist.self)?.items == ["milk", "eggs", "jam", "bread"])
        }
    }

    @Test func handlerErrorsPropagateAndWriteNothing() async throws {
        struct Refused: Error {}
        try await withDatabase { database, _ in
            let collection = try database.defaultCollection()
            let (copyA, copyB) = try await twoStaleCopies(in: collection)
            copyA.name = "A"
            try await collection.save(from: copyA)
            await #expect(throws: Refused.self) {
                try await collection.save(from: copyB) { _, _ in throw Refused() }
            }
            #expect(try await collection.document(id: "list", as: Checklist.self)?.name == "A")
        }
    }

    @Test func theHandlerCannotChangeTheId() async throws {
        try await withDatabase { database, _ in
            let collection = try database.defaultCollection()
            let (copyA, copyB) = try await twoStaleCopies(in: collection)
            try await collection.save(from: copyA)
            await expectCouchetteError(.invalidParameter) {
                try await collection.save(from: copyB) { mine, _ in
                    mine.id = "elsewhere"
                    return true
                }
            }
            #expect(try await collection.document(id: "elsewhere") == nil)
        }
    }

    // MARK: - Objects never read

    @Test func anObjectNeverReadIsComparedAgainstTheCurrentRevision() async throws {
        try await withDatabase { database, _ in
            let collection = try database.defaultCollection()
            try await collection.save(from: Checklist(id: "list", name: "old"))
            // Built in code (or decoded from a query result): not bound to any revision.
            let fresh = Checklist(id: "list", name: "new")
            #expect(try boundRevision(of: fresh) == nil)
            #expect(try await collection.save(from: fresh, concurrencyControl: .failOnConflict))
            #expect(try await collection.document(id: "list", as: Checklist.self)?.name == "new")
            #expect(try boundRevision(of: fresh)?.hasPrefix("2-") == true)

            var calls = 0
            let another = Checklist(id: "list", name: "newer")
            #expect(
                try await collection.save(from: another) { _, _ in
                    calls += 1; return true
                })
            #expect(calls == 0)

            let deleter = Checklist(id: "list", name: "")
            #expect(try await collection.delete(for: deleter, concurrencyControl: .failOnConflict))
            #expect(try await collection.document(id: "list") == nil)
        }
    }

    @Test func anObjectDecodedByAnotherDecoderIsNotBound() async throws {
        try await withDatabase { database, _ in
            let collection = try database.defaultCollection()
            try await collection.save(from: Checklist(id: "list", name: "stored"))
            let fromJSON = try JSONDecoder().decode(Checklist.self, from: Data(#"{"id": "list", "name": "json", "items": []}"#.utf8))
            #expect(try boundRevision(of: fromJSON) == nil)
            #expect(try await collection.save(from: fromJSON, concurrencyControl: .failOnConflict))
            #expect(try await collection.document(id: "list", as: Checklist.self)?.name == "json")
        }
    }

    // MARK: - Many writers

    @Test func eightTasksAddingToOneSharedModelLoseNoItem() async throws {
        try await withDatabase { database, _ in
            let collection = try database.defaultCollection()
            try await collection.save(from: Checklist(id: "shared", name: "shared"))
            try await withThrowingTaskGroup(of: Void.self) { group in
                for writer in 0..<8 {
                    group.addTask {
                        // Each task has its own object for the shared document.
                        let mine = try #require(try await collection.document(id: "shared", as: Checklist.self))
                        for index in 0..<250 {
                            let item = "w\(writer)-\(index)"
                            mine.items.append(item)
                            try await collection.save(from: mine) { mine, stored in
                                mine.items = (stored?.items ?? []) + [item]
                                return true
                            }
                        }
                    }
                }
                try await group.waitForAll()
            }
            let final = try #require(try await collection.document(id: "shared", as: Checklist.self))
            #expect(final.items.count == 2000)
            #expect(Set(final.items).count == 2000)
            // Each writer's items are in its own order.
            for writer in 0..<8 {
                let own = final.items.filter { $0.hasPrefix("w\(writer)-") }
                #expect(own == (0..<250).map { "w\(writer)-\($0)" })
            }
        }
    }
}
