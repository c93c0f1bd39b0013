import Testing

@testable import Couchette

@Suite(.tags(.sanitizeAddress, .sanitizeAddress)) struct CollectionTests {
    @Test func defaultScopeAndCollectionAlwaysExist() async throws {
        try await withDatabase { database, _ in
            let collection = try database.defaultCollection()
            #expect(collection.name == "_default")
            #expect(collection.fullName == "_default._default")
            #expect(collection.scope.name == "_default")
            #expect(try database.defaultScope().name == "_default")
            #expect(try database.scopes().map(\.name) == ["_default"])
            #expect(try database.collections().map(\.name) == ["_default"])
        }
    }

    @Test func createCollectionIsIdempotentAndScoped() async throws {
        try await withDatabase { database, _ in
            let first = try await database.createCollection(name: "tasks")
            let again = try await database.createCollection(name: "tasks")
            #expect(first == again)
            #expect(first.fullName == "_default.tasks")
            let inventory = try await database.createCollection(name: "items", scope: "inventory")
            #expect(inventory.fullName == "inventory.items")
            #expect(try database.scopes().map(\.name) == ["_default", "inventory"])
            #expect(try database.scope(name: "inventory")?.collections().map(\.name) == ["items"])
            #expect(try database.collection(name: "items", scope: "inventory") == inventory)
            #expect(try database.collection(name: "items") == nil)
            #expect(try database.scope(name: "nowhere") == nil)
            #expect(try database.collections().map(\.name) == ["_default", "tasks"])
        }
    }

    @Test(arguments: ["", "_private", "%odd", "has space", "dot.ted", "slash/", "é", String(repeating: "a", count: 252)])
    func invalidNamesAreRejected(name: String) async throws {
        try await withDatabase { database, _ in
            let message = await expectCouchetteError(.invalidParameter) {
                _ = try await database.createCollection(name: name)
            }
            #expect(message?.contains("'\(name)'") == true)
            await expectCouchetteError(.invalidParameter) {
                _ = try await database.createCollection(name: "fine", scope: name)
            }
        }
    }

    @Test(arguments: ["a", "A-b_c%d", "9lives", String(repeating: "z", count: 251)])
    func validNamesAreAccepted(name: String) async throws {
        try await withDatabase { database, _ in
            let collection = try await database.createCollection(name: name, scope: name)
            #expect(collection.name == name)
            #expect(collection.scope.name == name)
        }
    }

    @Test func aScopeExistsWhileItHoldsACollection() async throws {
        try await withDatabase { database, _ in
            _ = try await database.createCollection(name: "a", scope: "s")
            _ = try await database.createCollection(name: "b", scope: "s")
            try await database.deleteCollection(name: "a", scope: "s")
            #expect(try database.scope(name: "s") != nil)
            try await database.deleteCollection(name: "b", scope: "s")
            #expect(try database.scope(name: "s") == nil)
            try await database.deleteCollection(name: "b", scope: "s")  // missing: no-op
        }
    }

    @Test func theDefaultCollectionCannotBeDeleted() async throws {
        try await withDatabase { database, _ in
            await expectCouchetteError(.invalidParameter) {
                try await database.deleteCollection(name: "_default")
            }
            await expectCouchetteError(.invalidParameter) {
                _ = try await database.createCollection(name: "_default", scope: "custom")
            }
        }
    }

    @Test func aDeletedCollectionThrowsNotOpenAndItsDocumentsAreGone() async throws {
        try await withDatabase { database, _ in
            let tasks = try await database.createCollection(name: "tasks")
            try await tasks.save(document: MutableDocument(id: "t1").setString("x", forKey: "title"))
            try await database.deleteCollection(name: "tasks")
            await expectCouchetteError(.notOpen) { _ = try await tasks.document(id: "t1") }
            await expectCouchetteError(.notOpen) { try await tasks.save(document: MutableDocument(id: "t2")) }
            await expectCouchetteError(.notOpen) { _ = try await tasks.count }
            let recreated = try await database.createCollection(name: "tasks")
            #expect(recreated != tasks)
            #expect(try await recreated.document(id: "t1") == nil)
            #expect(try await recreated.count == 0)
            await expectCouchetteError(.notOpen) { _ = try await tasks.document(id: "t1") }
            try await database.performMaintenance(type: .integrityCheck)
        }
    }

    @Test func collectionsCreatedByAnotherInstanceAreFound() async throws {
        let directory = try TemporaryDirectory()
        let first = try directory.open()
        let second = try directory.open()
        _ = try await first.createCollection(name: "shared")
        #expect(try second.collection(name: "shared") != nil)
        try await first.close()
        try await second.close()
    }
}
