import Foundation
import Testing

@testable import Couchette

/// The catalog generation: every change to the stored catalog advances it, a commit reads the
/// catalog again only when it moved, and it outlives compaction (whose transaction ids restart).
@Suite struct CatalogGenerationTests {
    @Test func everyCatalogChangeAdvancesTheGenerationAndNothingElseDoes() async throws {
        try await withDatabase { database, _ in
            let created = try Self.generation(database)
            #expect(created == 1, "a new file starts at generation 1 (its default collection)")
            let items = try await database.createCollection(name: "items")
            #expect(try Self.generation(database) == created + 1)
            _ = try await database.createCollection(name: "items")  // exists: no change
            try await database.deleteCollection(name: "missing")  // nothing to delete: no change
            try await items.save(document: MutableDocument(id: "a"))
            try await database.defaultCollection().save(document: MutableDocument(id: "b"))
            try await database.inBatch { batch in try batch.purge(id: "a", in: items) }
            #expect(try Self.generation(database) == created + 1)
            try await database.deleteCollection(name: "items")
            #expect(try Self.generation(database) == created + 2)
        }
    }

    /// The stored `"c:"` entries are read only when the generation moved: an entry written
    /// without advancing it (which no format-3 writer does) stays unseen by commits and look-ups,
    /// and advancing the generation makes both see it.
    @Test func theCatalogIsReadAgainOnlyWhenTheGenerationMoves() async throws {
        try await withDatabase { database, _ in
            let core = database.core
            let collection = try database.defaultCollection()
            try await collection.save(document: MutableDocument(id: "first"))
            let sneaked = CollectionSpec(scope: Catalog.defaultName, name: "sneaked", number: 99)
            try core.environment.write { txn in
                try txn.put(
                    core.environment.tables.meta, key: StoreLayout.collectionKey(scope: sneaked.scope, name: sneaked.name),
                    value: StoreLayout.encodeUInt32(sneaked.number))
            }
            try await collection.save(document: MutableDocument(id: "second"))
            #expect(try database.collection(name: "sneaked") == nil)
            #expect(!core.catalog.contains(sneaked))

            try core.environment.write { try core.store.advanceCatalogGeneration($0) }
            try await collection.save(document: MutableDocument(id: "third"))
            #expect(core.catalog.contains(sneaked), "the commit read the catalog again")
            #expect(try database.collection(name: "sneaked")?.spec == sneaked)
        }
    }

    /// Compaction rewrites the file and restarts LMDB's transaction ids; the generation is a
    /// stored value and comes through unchanged, so copies stay valid, and a collection another
    /// instance deletes afterwards is still noticed.
    @Test func compactionKeepsTheGenerationAndLaterChangesAreNoticed() async throws {
        let directory = try TemporaryDirectory()
        let first = try directory.open("shared")
        let items = try await first.createCollection(name: "items")
        for index in 0..<50 { try await items.save(document: MutableDocument(id: "doc-\(index)").setInt(index, forKey: "n")) }
        let before = try Self.generation(first)
        try await first.performMaintenance(type: .compact)
        #expect(try Self.generation(first) == before)
        try await items.save(document: MutableDocument(id: "after-compaction"))
        #expect(try await items.count == 51)

        let second = try directory.open("shared")
        try await second.deleteCollection(name: "items")
        _ = try await second.createCollection(name: "items")
        await expectCouchetteError(.notOpen) { try await items.save(document: MutableDocument(id: "lost")) }
        #expect(try await first.collection(name: "items")?.count == 0)
        try await first.close()
        try await second.close()
    }

    /// A commit reads the generation through its transaction's kept cursor (the write
    /// transaction's overload), a snapshot with a plain look-up: both find the same value, and the
    /// write transaction sees its own advance at once.
    @Test func writeAndReadTransactionsReadTheSameGeneration() async throws {
        try await withDatabase { database, _ in
            let core = database.core
            let stored = try Self.generation(database)
            let seenInWrite = try core.environment.write { txn -> (before: UInt64, after: UInt64, asRead: UInt64) in
                let before = try core.store.catalogGeneration(txn)
                try core.store.advanceCatalogGeneration(txn)
                let after = try core.store.catalogGeneration(txn)
                return (before, after, try core.store.catalogGeneration(txn as ReadTransaction))
            }
            #expect(seenInWrite.before == stored)
            #expect(seenInWrite.after == stored + 1)
            #expect(seenInWrite.asRead == stored + 1)
            #expect(try Self.generation(database) == stored + 1)
        }
    }

    private static func generation(_ database: Database) throws -> UInt64 {
        try database.core.read { try database.core.store.catalogGeneration($0) }
    }
}
