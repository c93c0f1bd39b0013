import Foundation
import Testing

@testable import Couchette

@Suite(.tags(.sanitizeAddress, .sanitizeAddress)) struct PersistenceTests {
    @Test func documentsSurviveCloseAndReopen() async throws {
        let directory = try TemporaryDirectory()
        let database = try directory.open("persist")
        #expect(database.path == directory.path + "/persist.couchette/")
        let tasks = try await database.createCollection(name: "tasks", scope: "app")
        try await tasks.save(document: MutableDocument(id: "t").setString("kept", forKey: "v"))
        let revision = try await tasks.document(id: "t")?.revisionID
        try await database.close()

        #expect(Database.exists(withName: "persist", inDirectory: directory.path))
        let reopened = try directory.open("persist")
        let stored = try #require(try await reopened.collection(name: "tasks", scope: "app")?.document(id: "t"))
        #expect(stored.string(forKey: "v") == "kept")
        #expect(stored.revisionID == revision)
        // Sequences continue where they stopped.
        let next = MutableDocument(id: "u")
        try await reopened.collection(name: "tasks", scope: "app")?.save(document: next)
        #expect(next.sequence == 2)
        try await reopened.close()
    }

    @Test func everyCallAfterCloseThrowsNotOpen() async throws {
        let directory = try TemporaryDirectory()
        let database = try directory.open()
        let collection = try database.defaultCollection()
        try await collection.save(document: MutableDocument(id: "d"))
        let document = try #require(try await collection.document(id: "d"))
        try await database.close()
        try await database.close()  // twice is fine
        await expectCouchetteError(.notOpen) { _ = try await collection.document(id: "d") }
        await expectCouchetteError(.notOpen) { try await collection.save(document: MutableDocument(id: "e")) }
        await expectCouchetteError(.notOpen) { try await collection.delete(document: document) }
        await expectCouchetteError(.notOpen) { try await collection.purge(id: "d") }
        await expectCouchetteError(.notOpen) { _ = try await collection.count }
        await expectCouchetteError(.notOpen) { _ = try database.defaultCollection() }
        await expectCouchetteError(.notOpen) { _ = try await database.createCollection(name: "x") }
        await expectCouchetteError(.notOpen) { try await database.inBatch { _ in } }
        await expectCouchetteError(.notOpen) { try await database.performMaintenance(type: .compact) }
        await expectCouchetteError(.notOpen) { try await collection.setDocumentExpiration(id: "d", expiration: nil) }
    }

    @Test func existsDeleteAndCopy() async throws {
        let directory = try TemporaryDirectory()
        #expect(!Database.exists(withName: "db", inDirectory: directory.path))
        let database = try directory.open("db")
        try await database.defaultCollection().save(document: MutableDocument(id: "seed").setInt(7, forKey: "n"))
        #expect(Database.exists(withName: "db", inDirectory: directory.path))
        await expectCouchetteError(.busy) { try Database.delete(withName: "db", inDirectory: directory.path) }

        // Copy while open: a consistent snapshot.
        var config = directory.configuration
        config.fullSync = true
        try Database.copy(fromPath: database.path, toDatabase: "copy", withConfig: config)
        await expectCouchetteError(.invalidParameter) {
            try Database.copy(fromPath: database.path, toDatabase: "copy", withConfig: config)
        }
        await expectCouchetteError(.notFound) {
            try Database.copy(fromPath: directory.path + "/nothing", toDatabase: "other", withConfig: config)
        }
        let copy = try Database(name: "copy", config: config)
        #expect(try await copy.defaultCollection().document(id: "seed")?.int(forKey: "n") == 7)
        try await copy.delete()
        #expect(!Database.exists(withName: "copy", inDirectory: directory.path))

        try await database.close()
        try Database.delete(withName: "db", inDirectory: directory.path)
        #expect(!Database.exists(withName: "db", inDirectory: directory.path))
        try Database.delete(withName: "db", inDirectory: directory.path)  // missing: nothing to do
    }

    @Test(arguments: ["", "a/b", ".."])
    func invalidDatabaseNamesAreRejected(name: String) async throws {
        let directory = try TemporaryDirectory()
        await expectCouchetteError(.invalidParameter) { _ = try directory.open(name) }
    }

    @Test func compactionShrinksTheFileAndKeepsTheData() async throws {
        let directory = try TemporaryDirectory()
        let database = try directory.open()
        let collection = try database.defaultCollection()
        let padding = String(repeating: "p", count: 4000)
        try await database.inBatch { batch in
            for index in 0..<2000 {
                try batch.save(document: MutableDocument(id: "d\(index)").setString(padding, forKey: "pad"), in: collection)
            }
        }
        try await database.inBatch { batch in
            for index in 0..<1990 { try batch.purge(id: "d\(index)", in: collection) }
        }
        let before = database.reader.fileSize
        try await database.performMaintenance(type: .compact)
        let after = database.reader.fileSize
        #expect(after < before / 4, "compaction left \(after) of \(before) bytes")
        #expect(try await collection.count == 10)
        #expect(try await collection.document(id: "d1999")?.string(forKey: "pad") == padding)
        try await collection.save(document: MutableDocument(id: "after-compaction"))
        try await database.performMaintenance(type: .integrityCheck)
        try await database.close()
        let reopened = try directory.open()
        #expect(try await reopened.defaultCollection().count == 11)
        try await reopened.close()
    }

    @Test func compactionIsRefusedWhileAnotherInstanceHasTheDatabaseOpen() async throws {
        let directory = try TemporaryDirectory()
        let first = try directory.open()
        let second = try directory.open()
        await expectCouchetteError(.busy) { try await first.performMaintenance(type: .compact) }
        try await second.close()
        try await first.performMaintenance(type: .compact)
        try await first.close()
    }

    @Test func theMapGrowsWithoutTheCallerNoticing() async throws {
        try await withDatabase { database, _ in
            let collection = try database.defaultCollection()
            let initial = StorageEnvironment.initialMapSize
            let big = String(repeating: "m", count: 1 << 20)
            for index in 0..<(2 * initial / (1 << 20)) {
                try await collection.save(document: MutableDocument(id: "big\(index)").setString(big, forKey: "blob"))
            }
            // The file never outgrows LMDB's map: holding more than the first map, the map grew.
            #expect(database.reader.fileSize > UInt64(initial))
            #expect(try await collection.document(id: "big0")?.string(forKey: "blob")?.count == 1 << 20)
            #expect(try await collection.count == UInt64(2 * initial / (1 << 20)))
        }
    }

    @Test func fullSyncDatabasesWorkTheSame() async throws {
        let directory = try TemporaryDirectory()
        var config = directory.configuration
        config.fullSync = true
        let database = try Database(name: "durable", config: config)
        try await database.defaultCollection().save(document: MutableDocument(id: "x").setInt(1, forKey: "v"))
        try await database.close()
        let reopened = try Database(name: "durable", config: config)
        #expect(try await reopened.defaultCollection().document(id: "x")?.int(forKey: "v") == 1)
        try await reopened.close()
    }

    @Test func integrityCheckFindsInconsistencies() async throws {
        try await withDatabase { database, _ in
            let collection = try database.defaultCollection()
            try await collection.save(document: MutableDocument(id: "a"))
            try await database.performMaintenance(type: .integrityCheck)
            let tables = database.core.environment.tables
            // The newest entries live in the collection's sequence tail (see SequenceIndex).
            let removed = try database.core.environment.write { txn in
                try txn.delete(tables.counters, key: StoreLayout.sequenceTailKey(collection.spec.number))
            }
            #expect(removed)
            let message = await expectCouchetteError(.corruption) { try await database.performMaintenance(type: .integrityCheck) }
            #expect(message?.contains("'a'") == true)
        }
    }

    @Test func anUnknownStorageFormatIsRefused() async throws {
        let directory = try TemporaryDirectory()
        let database = try directory.open()
        let tables = database.core.environment.tables
        try database.core.environment.write { txn in
            try txn.put(tables.meta, key: StoreLayout.formatKey, value: StoreLayout.encodeUInt32(99))
        }
        try await database.close()
        await expectCouchetteError(.corruption) { _ = try directory.open() }
    }
}
