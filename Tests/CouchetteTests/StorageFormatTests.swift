import CLMDB
import Foundation
import Testing

@testable import Couchette

/// Where the per-collection counters live (LMDB's main database, whose page every commit writes
/// anyway), the upgrade of files that kept them in `meta`, and the LMDB flags of each durability
/// mode.
@Suite struct StorageFormatTests {
    /// Format 1 kept each collection's last sequence and live count in `meta`. Opening such a
    /// file moves them: the counts stay right and sequences go on from where they were.
    @Test func aFormatOneFileIsUpgradedWithItsCountersIntact() async throws {
        let directory = try TemporaryDirectory()
        var database: Database? = try directory.open("old")
        let folder = try #require(database?.path)
        let items = try #require(try await database?.createCollection(name: "items"))
        for id in ["a", "b", "c"] { try await items.save(document: MutableDocument(id: id).setString(id, forKey: "v")) }
        try await items.delete(document: try #require(try await items.document(id: "b")))
        try await database?.defaultCollection().save(document: MutableDocument(id: "d"))
        try await database?.close()
        database = nil

        try Self.rewriteAsFormatOne(folder: folder)
        #expect(try Self.counterKeys(folder: folder, in: \.meta).count == 4)

        let reopened = try directory.open("old")
        let upgraded = try #require(try reopened.collection(name: "items"))
        #expect(try await upgraded.count == 2)
        try await upgraded.save(document: MutableDocument(id: "e"))
        #expect(try await upgraded.document(id: "e")?.sequence == 5)  // a, b, c, b's deletion, then e
        #expect(try await reopened.defaultCollection().count == 1)
        try await reopened.performMaintenance(type: .integrityCheck)
        try await reopened.close()
        #expect(try Self.counterKeys(folder: folder, in: \.meta).isEmpty)
        #expect(try Self.counterKeys(folder: folder, in: \.counters).count == 4)
        #expect(try Self.storedFormat(folder: folder) == StoreLayout.formatVersion)
    }

    /// Format 2 had no catalog generation. Opening such a file gives it one (and format 3) in
    /// the upgrade's transaction, its catalog and documents intact; later catalog changes
    /// advance it.
    @Test func aFormatTwoFileIsUpgradedWithACatalogGeneration() async throws {
        let directory = try TemporaryDirectory()
        var database: Database? = try directory.open("two")
        let folder = try #require(database?.path)
        let items = try #require(try await database?.createCollection(name: "items"))
        try await items.save(document: MutableDocument(id: "kept").setInt(1, forKey: "n"))
        try await database?.close()
        database = nil

        try Self.rewriteAsFormatTwo(folder: folder)
        #expect(try Self.storedGeneration(folder: folder) == nil)

        let reopened = try directory.open("two")
        let core = reopened.core
        #expect(try core.read { try core.store.catalogGeneration($0) } == 1)
        let upgraded = try #require(try reopened.collection(name: "items"))
        #expect(try await upgraded.document(id: "kept")?.int(forKey: "n") == 1)
        _ = try await reopened.createCollection(name: "more")
        #expect(try core.read { try core.store.catalogGeneration($0) } == 2)
        try await reopened.performMaintenance(type: .integrityCheck)
        try await reopened.close()
        #expect(try Self.storedFormat(folder: folder) == StoreLayout.formatVersion)
        #expect(try Self.storedGeneration(folder: folder) == 2)
    }

    /// Format 3 kept every sequence entry in the `sequences` table. Opening such a file makes it
    /// format 4 without moving anything (its collections' tails are empty): every reader finds
    /// the old entries, and new saves go to the tails after them.
    @Test func aFormatThreeFileIsUpgradedWithItsSequencesInTheTable() async throws {
        let directory = try TemporaryDirectory()
        var database: Database? = try directory.open("three")
        let folder = try #require(database?.path)
        let items = try #require(try await database?.createCollection(name: "items"))
        for index in 0..<50 { try await items.save(document: MutableDocument(id: "item-\(index)").setInt(index, forKey: "n")) }
        try await items.delete(document: try #require(try await items.document(id: "item-3")))
        try await database?.defaultCollection().save(document: MutableDocument(id: "default"))
        try await database?.close()
        database = nil

        #expect(try Self.rewriteAsFormatThree(folder: folder) == 51)  // item-3's first entry went with its deletion

        let reopened = try directory.open("three")
        let upgraded = try #require(try reopened.collection(name: "items"))
        #expect(try SequenceTailTests.layout(reopened, upgraded.spec) == (Array(1...51).filter { $0 != 4 }, []))
        try await SequenceTailTests.expectConsistentIndex(reopened, upgraded)
        for index in 50..<60 { try await upgraded.save(document: MutableDocument(id: "item-\(index)")) }
        try await upgraded.save(document: try #require(try await upgraded.document(id: "item-0")).toMutable().setInt(-1, forKey: "n"))
        #expect(try SequenceTailTests.layout(reopened, upgraded.spec) == (Array(2...51).filter { $0 != 4 }, Array(52...62)))
        #expect(try await upgraded.count == 59)
        try await SequenceTailTests.expectConsistentIndex(reopened, upgraded)
        try await SequenceTailTests.expectConsistentIndex(reopened, try reopened.defaultCollection())
        try await reopened.close()
        #expect(try Self.storedFormat(folder: folder) == StoreLayout.formatVersion)
    }

    /// A file written by a newer version is refused, not misread.
    @Test func aNewerFormatIsRefused() async throws {
        let directory = try TemporaryDirectory()
        let database = try directory.open("new")
        let folder = database.path
        try await database.close()
        let environment = try StorageEnvironment(path: folder)
        try environment.write { txn in
            try txn.put(environment.tables.meta, key: StoreLayout.formatKey, value: StoreLayout.encodeUInt32(StoreLayout.formatVersion + 1))
        }
        environment.close()
        let message = await expectCouchetteError(.corruption) { _ = try directory.open("new") }
        #expect(message?.contains("storage format \(StoreLayout.formatVersion + 1)") == true)
    }

    /// A save writes the counters beside the table records in the main database and leaves the
    /// `meta` table (catalog, UUID, `_local` documents) as it was: its root page is not copied
    /// (LMDB copies every page it writes to, so an untouched table keeps its record in the main
    /// database byte for byte), one page less to sync per commit.
    @Test func aSaveLeavesTheMetaTableUntouched() async throws {
        try await withDatabase { database, _ in
            let collection = try database.defaultCollection()
            try await collection.save(document: MutableDocument(id: "first"))
            let before = try Self.tableRecords(database)
            for index in 0..<20 { try await collection.save(document: MutableDocument(id: "doc-\(index)").setInt(index, forKey: "n")) }
            let after = try Self.tableRecords(database)
            #expect(after["meta"] != nil && after["meta"] == before["meta"])
            #expect(after["documents"] != before["documents"])
            #expect(try await collection.count == 21)
        }
    }

    /// What a single save's commit writes (issue #21): each table it changes costs the pages on
    /// the path from its root to the changed leaf, and every one is written before the sync. A
    /// new document changes only `documents` (its counters and its sequence entry, in the
    /// collection's sequence tail, ride in the main database, whose page the commit writes
    /// anyway); an update or a deletion also the document's `revisions` entry, which its second
    /// revision creates. Every other table keeps its record in the main database byte for byte:
    /// no page of it was copied.
    @Test func aSingleSaveRewritesOnlyTheTablesItChanges() async throws {
        try await withDatabase { database, _ in
            let collection = try database.defaultCollection()
            try await collection.save(document: MutableDocument(id: "first").setInt(0, forKey: "n"))
            var before = try Self.tableRecords(database)
            try await collection.save(document: MutableDocument(id: "second").setInt(1, forKey: "n"))
            var after = try Self.tableRecords(database)
            #expect(after.count == StorageEnvironment.Tables.names.count)
            #expect(Self.changedTables(before, after) == ["documents"])

            before = after
            let second = try #require(try await collection.document(id: "second"))
            try await collection.save(document: second.toMutable().setInt(2, forKey: "n"))
            after = try Self.tableRecords(database)
            #expect(Self.changedTables(before, after) == ["documents", "revisions"])

            before = after
            try await collection.delete(document: try #require(try await collection.document(id: "second")))
            after = try Self.tableRecords(database)
            #expect(Self.changedTables(before, after) == ["documents", "revisions"])
            #expect(try await collection.count == 1)
            #expect(try await collection.document(id: "first")?.int(forKey: "n") == 0)
        }
    }

    /// Full sync has LMDB sync the meta page itself (no `MDB_NOMETASYNC`, no second sync after
    /// the commit); the default leaves it to the next commit's sync.
    @Test func eachDurabilityModeOpensLMDBWithItsFlags() async throws {
        let directory = try TemporaryDirectory()
        var config = DatabaseConfiguration(directory: directory.path)
        let relaxed = try Database(name: "relaxed", config: config)
        config.fullSync = true
        let durable = try Database(name: "durable", config: config)
        #expect(relaxed.core.environment.lmdbFlags & UInt32(MDB_NOMETASYNC) != 0)
        #expect(durable.core.environment.lmdbFlags & UInt32(MDB_NOMETASYNC) == 0)
        #expect(durable.core.environment.syncsMetaPage)
        try await durable.defaultCollection().save(document: MutableDocument(id: "kept"))
        #expect(try await durable.defaultCollection().document(id: "kept") != nil)
        try await relaxed.close()
        try await durable.close()
    }

    // MARK: - Helpers

    private static func rewriteAsFormatOne(folder: String) throws {
        let environment = try StorageEnvironment(path: folder)
        defer { environment.close() }
        let tables = environment.tables
        let store = DocumentStore(tables: tables, indexes: IndexRegistry(tables: tables))
        try environment.write { txn in
            try store.moveCounters(txn, from: tables.counters, to: tables.meta)
            _ = try txn.delete(tables.counters, key: StoreLayout.catalogGenerationKey)
            try txn.put(tables.meta, key: StoreLayout.formatKey, value: StoreLayout.encodeUInt32(1))
        }
    }

    /// Format 2 is format 3 without the catalog generation.
    private static func rewriteAsFormatTwo(folder: String) throws {
        let environment = try StorageEnvironment(path: folder)
        defer { environment.close() }
        try environment.write { txn in
            _ = try txn.delete(environment.tables.counters, key: StoreLayout.catalogGenerationKey)
            try txn.put(environment.tables.meta, key: StoreLayout.formatKey, value: StoreLayout.encodeUInt32(2))
        }
    }

    /// Format 3 is format 4 with every sequence entry in the `sequences` table: moves the tails'
    /// entries there and returns how many there are in all.
    private static func rewriteAsFormatThree(folder: String) throws -> Int {
        let environment = try StorageEnvironment(path: folder)
        defer { environment.close() }
        let tables = environment.tables
        return try environment.write { txn in
            var tails: [[UInt8]] = []
            try txn.scan(tables.counters, prefix: StoreLayout.sequenceTailPrefix) { key, _ in
                tails.append(Array(key))
                return true
            }
            for key in tails {
                let collection = key.withUnsafeBytes { KeyEncoding.readUInt32($0, at: StoreLayout.sequenceTailPrefix.count) }
                try SequenceTail(bytes: try #require(try txn.get(tables.counters, key: key))).forEach { entry in
                    try txn.put(
                        tables.sequences, key: StoreLayout.sequenceKey(collection, entry.sequence),
                        value: [entry.isDeleted ? 1 : 0] + Array(entry.id))
                    return true
                }
                try txn.delete(tables.counters, key: key)
            }
            try txn.put(tables.meta, key: StoreLayout.formatKey, value: StoreLayout.encodeUInt32(3))
            var entries = 0
            try txn.scan(tables.sequences, from: [], to: nil) { _, _ in
                entries += 1
                return true
            }
            return entries
        }
    }

    private static func storedGeneration(folder: String) throws -> UInt64? {
        let environment = try StorageEnvironment(path: folder)
        defer { environment.close() }
        return try environment.read { txn in
            try txn.get(environment.tables.counters, key: StoreLayout.catalogGenerationKey).map { StoreLayout.decodeUInt64($0) }
        }
    }

    private static func counterKeys(folder: String, in table: KeyPath<StorageEnvironment.Tables, Table>) throws -> [[UInt8]] {
        let environment = try StorageEnvironment(path: folder)
        defer { environment.close() }
        return try environment.read { txn in
            var keys: [[UInt8]] = []
            for prefix in [StoreLayout.sequenceCounterPrefix, StoreLayout.countPrefix] {
                try txn.scan(environment.tables[keyPath: table], prefix: prefix) { key, _ in
                    keys.append(Array(key))
                    return true
                }
            }
            return keys
        }
    }

    private static func storedFormat(folder: String) throws -> UInt32? {
        let environment = try StorageEnvironment(path: folder)
        defer { environment.close() }
        return try environment.read { try $0.get(environment.tables.meta, key: StoreLayout.formatKey).flatMap(StoreLayout.decodeUInt32) }
    }

    /// The main database's record (`MDB_db`: root page, depth, entries) of every table (an empty
    /// table has one too: it is created when the database is).
    private static func tableRecords(_ database: Database) throws -> [String: [UInt8]] {
        let environment = database.core.environment
        return try environment.read { txn in
            var records: [String: [UInt8]] = [:]
            for table in StorageEnvironment.Tables.names {
                let name = table.name.withUTF8Buffer { String(decoding: $0, as: UTF8.self) }
                records[name] = try txn.getBytes(environment.tables.counters, key: Array(name.utf8))
            }
            return records
        }
    }

    /// The names of the tables whose records differ, sorted.
    private static func changedTables(_ before: [String: [UInt8]], _ after: [String: [UInt8]]) -> [String] {
        Set(before.keys).union(after.keys).filter { before[$0] != after[$0] }.sorted()
    }
}
