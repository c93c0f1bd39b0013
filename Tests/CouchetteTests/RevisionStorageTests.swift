import Testing

@testable import Couchette

/// A document whose history is only its current revision has no `revisions` entry; its tree is
/// rebuilt from the record. Longer histories are stored as before.
@Suite(.tags(.sanitizeAddress, .sanitizeAddress)) struct RevisionStorageTests {
    private func storedTree(_ collection: Collection, _ id: String) throws -> [UInt8]? {
        let environment = collection.core.environment
        return try environment.read { txn in
            try txn.get(environment.tables.revisions, key: StoreLayout.documentKey(collection.spec.number, id)).map { Array($0) }
        }
    }

    @Test func aNewDocumentStoresNoTreeButReadsAsOneRevision() async throws {
        try await withDatabase { database, _ in
            let collection = try database.defaultCollection()
            let document = MutableDocument(id: "fresh").setInt(1, forKey: "v")
            try await collection.save(document: document)
            #expect(try storedTree(collection, "fresh") == nil)
            let tree = try collection.revisionTree(id: "fresh")
            #expect(tree.nodes.count == 1)
            let node = try #require(tree.nodes.first)
            #expect(node.revisionID == document.revisionID)
            #expect(node.sequence == document.sequence)
            #expect(node.parent == nil && !node.isDeleted && node.body == nil)
            #expect(try collection.revisionTree(id: "absent").isEmpty)
            try await database.performMaintenance(type: .integrityCheck)
        }
    }

    @Test func anUpdateStoresTheChain() async throws {
        try await withDatabase { database, _ in
            let collection = try database.defaultCollection()
            let document = MutableDocument(id: "d").setInt(1, forKey: "v")
            try await collection.save(document: document)
            let first = try #require(document.revisionID)
            document.setInt(2, forKey: "v")
            try await collection.save(document: document)
            let second = try #require(document.revisionID)
            #expect(try storedTree(collection, "d") != nil)
            let tree = try collection.revisionTree(id: "d")
            #expect(tree.history(of: second) == [second, first])
            #expect(tree.winner?.revisionID == second)

            // Deleting a fresh document also makes a two-revision history, which is stored.
            try await collection.save(document: MutableDocument(id: "gone"))
            try await collection.delete(document: try #require(try await collection.document(id: "gone")))
            #expect(try storedTree(collection, "gone") != nil)
            #expect(try collection.revisionTree(id: "gone").winner?.isDeleted == true)
            try await database.performMaintenance(type: .integrityCheck)
        }
    }

    @Test func graftsStoreATreeOnlyWhenItSaysMoreThanTheRecord() async throws {
        try await withDatabase { database, _ in
            let collection = try database.defaultCollection()
            let body = try ValueEncoder.encode(.dictionary(["k": .string("v")]))
            let lone = try RevisionID.make(parent: nil, deleted: false, body: body)
            let parent = try RevisionID.make(parent: nil, deleted: false, body: body + [0])
            let child = try RevisionID.make(parent: parent, deleted: false, body: body)
            _ = try await collection.graft([
                GraftedRevision(id: "lone", revisionID: lone, isDeleted: false, body: body, history: [lone]),
                GraftedRevision(id: "chain", revisionID: child, isDeleted: false, body: body, history: [child, parent]),
            ])
            #expect(try storedTree(collection, "lone") == nil)
            #expect(try collection.revisionTree(id: "lone").nodes.map(\.revisionID) == [lone])
            #expect(try storedTree(collection, "chain") != nil)
            #expect(try collection.revisionTree(id: "chain").history(of: child) == [child, parent])
            // A conflicting branch grafted onto the implicit tree keeps both revisions.
            let rival = try RevisionID.make(parent: nil, deleted: false, body: body + [1])
            _ = try await collection.graft([GraftedRevision(id: "lone", revisionID: rival, isDeleted: false, body: body, history: [rival])])
            #expect(try Set(collection.revisionTree(id: "lone").liveLeaves.map(\.revisionID)) == [lone, rival])
            try await database.performMaintenance(type: .integrityCheck)
        }
    }

    @Test func aStoredSingleRevisionTreeStillWins() async throws {
        // Databases written before trees became implicit store one for every document.
        try await withDatabase { database, _ in
            let collection = try database.defaultCollection()
            let document = MutableDocument(id: "old")
            try await collection.save(document: document)
            let revision = try #require(document.revisionID)
            var tree = RevisionTree()
            tree.add(revision, parent: nil, isDeleted: false, sequence: 77)
            let tables = database.core.environment.tables
            try database.core.environment.write { txn in
                try txn.put(tables.revisions, key: StoreLayout.documentKey(collection.spec.number, "old"), value: tree.encoded())
            }
            #expect(try collection.revisionTree(id: "old").nodes.first?.sequence == 77)
            document.setInt(1, forKey: "v")
            try await collection.save(document: document)
            #expect(try collection.revisionTree(id: "old").history(of: try #require(document.revisionID)).count == 2)
            try await database.performMaintenance(type: .integrityCheck)
        }
    }

    @Test func integrityCheckFindsATreeWithoutItsDocument() async throws {
        try await withDatabase { database, _ in
            let collection = try database.defaultCollection()
            var tree = RevisionTree()
            tree.add("1-abcd", parent: nil, isDeleted: false, sequence: 1)
            let tables = database.core.environment.tables
            try database.core.environment.write { txn in
                try txn.put(tables.revisions, key: StoreLayout.documentKey(collection.spec.number, "orphan"), value: tree.encoded())
            }
            let message = await expectCouchetteError(.corruption) { try await database.performMaintenance(type: .integrityCheck) }
            #expect(message?.contains("'orphan'") == true)
        }
    }
}
