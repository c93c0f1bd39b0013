import Foundation
import Testing

@testable import Couchette

/// The sequence tail (issue #21): a collection's newest sequence entries live in a short packed
/// value of LMDB's main database, the older ones in the `sequences` table. Whichever holds an
/// entry, every reader of the index — the replication feed and its pages, the read by sequence,
/// the statistics, the integrity check, full-text search — sees one list in sequence order, across
/// the moves of full tails to the table, updates, deletions and purges of entries in either
/// place, several collections, batches and a collection's deletion.
@Suite struct SequenceTailTests {
    /// 90 single saves fill the tail twice over (it moves at its 33rd entry); updates, deletions and purges then take
    /// entries out of the table and out of the tail.
    @Test func singleSavesUpdatesDeletionsAndPurgesKeepOneIndexInOrder() async throws {
        try await withDatabase { database, _ in
            let collection = try database.defaultCollection()
            for index in 0..<90 { try await collection.save(document: MutableDocument(id: "doc-\(index)").setInt(index, forKey: "n")) }
            let saved = try Self.layout(database, collection.spec)
            try #require(saved.table.count >= 3 && saved.tail.count >= 3)
            #expect(saved.table.count + saved.tail.count == 90)
            #expect(saved.table.max()! < saved.tail.min()!)
            #expect(saved.tail.count <= SequenceTail.maximumEntries)
            try await Self.expectConsistentIndex(database, collection)

            let inTable = { (offset: Int) in "doc-\(saved.table[offset] - 1)" }  // doc-i was saved under sequence i + 1
            let inTail = { (offset: Int) in "doc-\(saved.tail[offset] - 1)" }
            for id in [inTable(0), inTail(saved.tail.count - 1), inTail(0)] {
                let document = try #require(try await collection.document(id: id))
                try await collection.save(document: document.toMutable().setString("updated", forKey: "state"))
            }
            for id in [inTable(1), inTail(1)] {
                try await collection.delete(document: try #require(try await collection.document(id: id)))
            }
            for id in [inTable(2), inTail(2)] { try await collection.purge(id: id) }
            #expect(try await collection.count == 86)
            try await Self.expectConsistentIndex(database, collection)

            // A deleted document saved again, and more saves past the next move of the tail.
            try await collection.save(document: MutableDocument(id: inTable(1)).setString("back", forKey: "state"))
            for index in 90..<140 { try await collection.save(document: MutableDocument(id: "doc-\(index)")) }
            #expect(try await collection.count == 137)
            try await Self.expectConsistentIndex(database, collection)
        }
    }

    /// Each collection has its own tail; deleting a collection drops its tail with its table
    /// entries, a collection created under the same name starts with neither, and compaction
    /// keeps them all.
    @Test func collectionsKeepTheirOwnTailsAndADeletedCollectionLeavesNone() async throws {
        try await withDatabase { database, _ in
            let first = try await database.createCollection(name: "first")
            var second = try await database.createCollection(name: "second")
            for index in 0..<60 {
                try await first.save(document: MutableDocument(id: "f\(index)"))
                try await second.save(document: MutableDocument(id: "s\(index)"))
            }
            for collection in [first, second] {
                let layout = try Self.layout(database, collection.spec)
                #expect(layout.table.count + layout.tail.count == 60)
                #expect(!layout.tail.isEmpty)
                try await Self.expectConsistentIndex(database, collection)
            }
            let deleted = second.spec
            try await database.deleteCollection(name: "second")
            #expect(try Self.layout(database, deleted) == ([], []))
            #expect(try Self.storedTail(database, deleted.number) == nil)
            try await Self.expectConsistentIndex(database, first)

            second = try await database.createCollection(name: "second")
            #expect(second.spec.number != deleted.number)
            #expect(try second.replicationChanges(since: 0, limit: 10, documentIDs: nil).changes.isEmpty)
            try await second.save(document: MutableDocument(id: "again"))
            #expect(try Self.layout(database, second.spec) == ([], [1]))
            try await Self.expectConsistentIndex(database, second)

            // Compaction copies the tails with the rest of the main database.
            let before = try Self.layout(database, first.spec)
            try await database.performMaintenance(type: .compact)
            #expect(try Self.layout(database, first.spec) == before)
            try await Self.expectConsistentIndex(database, first)
        }
    }

    /// A batch of many documents moves the tail to the table and appends there: the tail is
    /// empty after its commit, and the next single save starts a new one.
    @Test func aBatchMovesTheTailToTheTable() async throws {
        try await withDatabase { database, _ in
            let collection = try database.defaultCollection()
            for index in 0..<5 { try await collection.save(document: MutableDocument(id: "single-\(index)")) }
            #expect(try Self.layout(database, collection.spec) == ([], [1, 2, 3, 4, 5]))
            try await database.inBatch { batch in
                for index in 0..<200 { try batch.save(id: "json-\(index)", json: #"{"n":\#(index)}"#, in: collection) }
            }
            let afterJSON = try Self.layout(database, collection.spec)
            #expect(afterJSON.table == Array(1...205))
            #expect(afterJSON.tail.isEmpty)

            try await collection.save(document: MutableDocument(id: "lone"))
            #expect(try Self.layout(database, collection.spec) == (Array(1...205), [206]))
            // Updates of existing documents, each through the general write path.
            var documents: [Document] = []
            for index in 0..<60 { documents.append(try #require(try await collection.document(id: "json-\(index)"))) }
            try await database.inBatch { batch in
                for document in documents { try batch.save(document: document.toMutable().setInt(1, forKey: "seen"), in: collection) }
            }
            #expect(try Self.layout(database, collection.spec).tail.isEmpty)
            #expect(try await collection.count == 206)
            try await Self.expectConsistentIndex(database, collection)
        }
    }

    /// An id too long for the tail goes to the table, after the tail's entries.
    @Test func aLongIDGoesToTheTableAfterTheTail() async throws {
        try await withDatabase { database, _ in
            let collection = try database.defaultCollection()
            for index in 0..<3 { try await collection.save(document: MutableDocument(id: "short-\(index)")) }
            let long = String(repeating: "x", count: SequenceTail.maximumIDLength + 1)
            try await collection.save(document: MutableDocument(id: long))
            #expect(try Self.layout(database, collection.spec) == ([1, 2, 3, 4], []))
            try await collection.save(document: MutableDocument(id: "short-3"))
            #expect(try Self.layout(database, collection.spec) == ([1, 2, 3, 4], [5]))
            // Its update takes its entry out of the table and moves the tail there again.
            try await collection.save(document: try #require(try await collection.document(id: long)).toMutable().setInt(1, forKey: "n"))
            #expect(try Self.layout(database, collection.spec) == ([1, 2, 3, 5, 6], []))
            try await Self.expectConsistentIndex(database, collection)
        }
    }

    /// A full-text index built over documents in the table and in the tail finds them all, and
    /// follows updates and deletions of either.
    @Test func fullTextSearchReadsTheTableAndTheTail() async throws {
        try await withDatabase { database, _ in
            let collection = try database.defaultCollection()
            for index in 0..<60 {
                try await collection.save(
                    document: MutableDocument(id: "t\(index)").setString(index % 3 == 0 ? "red apple" : "pear", forKey: "text"))
            }
            let layout = try Self.layout(database, collection.spec)
            try #require(!layout.table.isEmpty && !layout.tail.isEmpty)
            try await collection.createIndex(withName: "text", config: FullTextIndexConfiguration(["text"]))
            let query = try database.createQuery("SELECT meta().id AS id FROM _ WHERE MATCH(text, 'apple') ORDER BY meta().id")
            func found() async throws -> Set<String> { Set(try await query.execute().map { $0.string(forKey: "id") ?? "?" }) }
            var expected = Set(stride(from: 0, to: 60, by: 3).map { "t\($0)" })
            #expect(try await found() == expected)

            let tailID = "t\(layout.tail.last! - 1)"  // t59: not an apple yet
            try await collection.save(
                document: try #require(try await collection.document(id: tailID)).toMutable().setString("apple", forKey: "text"))
            try await collection.delete(document: try #require(try await collection.document(id: "t0")))
            expected.insert(tailID)
            expected.remove("t0")
            #expect(try await found() == expected)
            try await Self.expectConsistentIndex(database, collection)
        }
    }

    /// A damaged tail is reported as corruption by readers and writers, never read past its end.
    @Test func aMalformedTailIsCorruption() async throws {
        try await withDatabase { database, _ in
            let collection = try database.defaultCollection()
            try await collection.save(document: MutableDocument(id: "a"))
            let environment = database.core.environment
            let damagedTails: [[UInt8]] = [
                [0, 0, 0, 0, 0, 0, 0, 9, 40, 0, 97],  // an id said to be 40 bytes long, 1 stored
                [UInt8](repeating: 1, count: SequenceTail.maximumBytes + 1),  // too long, and a sequence repeated
                [1, 2, 3],  // an entry cut short
            ]
            for damaged in damagedTails {
                try environment.write { txn in
                    try txn.put(environment.tables.counters, key: StoreLayout.sequenceTailKey(collection.spec.number), value: damaged)
                }
                await expectCouchetteError(.corruption) { _ = try collection.replicationChanges(since: 0, limit: 10, documentIDs: nil) }
                await expectCouchetteError(.corruption) { try await database.performMaintenance(type: .integrityCheck) }
                await expectCouchetteError(.corruption) { try await collection.save(document: MutableDocument(id: "b")) }
            }
        }
    }

    // MARK: - Helpers

    /// The sequences of `spec`'s entries in the `sequences` table and in its tail, in order.
    static func layout(_ database: Database, _ spec: CollectionSpec) throws -> (table: [UInt64], tail: [UInt64]) {
        let core = database.core
        let tables = core.environment.tables
        return try core.read { txn in
            var table: [UInt64] = []
            try txn.scan(tables.sequences, prefix: StoreLayout.collectionPrefix(spec.number)) { key, _ in
                table.append(KeyEncoding.readUInt64(key, at: 4))
                return true
            }
            var tail: [UInt64] = []
            try SequenceIndex(tables: tables).tail(txn, spec.number).forEach { entry in
                tail.append(entry.sequence)
                return true
            }
            return (table, tail)
        }
    }

    private static func storedTail(_ database: Database, _ collection: UInt32) throws -> [UInt8]? {
        let core = database.core
        return try core.read { try $0.getBytes(core.environment.tables.counters, key: StoreLayout.sequenceTailKey(collection)) }
    }

    /// Checks every reader of `collection`'s sequence index against its records: the feed from 0
    /// lists each stored document once, at its record's sequence and deleted flag, in sequence
    /// order; a feed from any later sequence, and the feed read in pages, list the same entries;
    /// the read by sequence finds each live document; the statistics count the tombstones; and
    /// the integrity check passes.
    static func expectConsistentIndex(
        _ database: Database, _ collection: Collection, sourceLocation: SourceLocation = #_sourceLocation
    ) async throws {
        let spec = collection.spec
        let core = database.core
        let feed = try collection.replicationChanges(since: 0, limit: .max, documentIDs: nil).changes
        let sequences = feed.map(\.sequence)
        #expect(zip(sequences, sequences.dropFirst()).allSatisfy { $0 < $1 }, "out of order: \(sequences)", sourceLocation: sourceLocation)
        let records = try core.read { txn in
            var records: [String: (sequence: UInt64, isDeleted: Bool)] = [:]
            try txn.scan(core.environment.tables.documents, prefix: StoreLayout.collectionPrefix(spec.number)) { key, value in
                let record = try DocumentRecord(decoding: value)
                records[String(decoding: key[4...], as: UTF8.self)] = (record.sequence, record.isDeleted)
                return true
            }
            return records
        }
        #expect(feed.count == records.count, sourceLocation: sourceLocation)
        for change in feed {
            let record = records[change.id]
            #expect(
                record?.sequence == change.sequence && record?.isDeleted == change.isDeleted, "\(change)", sourceLocation: sourceLocation)
        }
        for since in [0, sequences.count / 3, sequences.count * 2 / 3, sequences.count - 1].compactMap({
            sequences.indices.contains($0) ? sequences[$0] : nil
        }) {
            let later = try collection.replicationChanges(since: since, limit: .max, documentIDs: nil).changes.map(\.sequence)
            #expect(later == sequences.filter { $0 > since }, "since \(since)", sourceLocation: sourceLocation)
        }
        var paged: [UInt64] = []
        var since: UInt64 = 0
        while true {
            let page = try collection.replicationChanges(since: since, limit: 7, documentIDs: nil)
            paged += page.changes.map(\.sequence)
            if page.changes.count < 7 { break }
            since = page.lastSequence
        }
        #expect(paged == sequences, sourceLocation: sourceLocation)
        let (liveIDs, deleted) = try database.reader.read { snapshot in
            (try feed.map { try snapshot.liveDocumentID(spec, sequence: $0.sequence) }, try snapshot.statistics(spec).deleted)
        }
        #expect(liveIDs == feed.map { $0.isDeleted ? nil : $0.id }, sourceLocation: sourceLocation)
        #expect(deleted == UInt64(feed.filter(\.isDeleted).count), sourceLocation: sourceLocation)
        try await database.performMaintenance(type: .integrityCheck)
    }
}
