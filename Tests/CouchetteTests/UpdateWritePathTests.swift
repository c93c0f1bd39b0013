import Foundation
import Testing

@testable import Couchette

/// The update path: the writer reads only the old record's header when no index needs its body,
/// appends sequence entries through a cursor kept on the table's last page, rewrites a record
/// where its cursor stands, and hands the new revision back in stored form; the caller reads
/// integers in place. Every table must stay consistent whichever shortcut a write takes.
@Suite struct UpdateWritePathTests {
    /// Reads each document, increments `visits` (and, with `grow`, lengthens `note`), and saves
    /// every edit in one batch; returns the edits.
    private func incrementVisits(
        _ ids: [String], in collection: Couchette.Collection, grow: Bool = false
    ) async throws -> [MutableDocument] {
        var edits: [MutableDocument] = []
        for id in ids {
            let document = try #require(try await collection.document(id: id), "\(id)")
            let edit = document.toMutable().setInt(document.int(forKey: "visits") + 1, forKey: "visits")
            if grow { edit.setString((document.string(forKey: "note") ?? "") + "+", forKey: "note") }
            edits.append(edit)
        }
        try await collection.database.inBatch { batch in
            for edit in edits { try batch.save(document: edit, in: collection) }
        }
        return edits
    }

    @Test func updatesInTwoCollectionsKeepTheSequenceIndex() async throws {
        try await withDatabase { database, _ in
            // The second collection's sequence keys sort after the default one's: the default
            // collection's new entries are not the table's last keys, so their append falls back.
            let first = try database.defaultCollection()
            let second = try await database.createCollection(name: "second")
            let ids = (0..<300).map { String(format: "d%04d", $0) }
            for collection in [first, second] {
                try await database.inBatch { batch in
                    for id in ids { try batch.save(document: MutableDocument(id: id).setInt(0, forKey: "visits"), in: collection) }
                }
            }
            var random = ValueEncodingTests.SeededGenerator(seed: 21)
            for round in 1...3 {
                let chosen = Array(ids.shuffled(using: &random).prefix(120))
                var edits: [(Couchette.Collection, MutableDocument)] = []
                for id in chosen {
                    for collection in [first, second] {
                        let document = try #require(try await collection.document(id: id))
                        edits.append((collection, document.toMutable().setInt(document.int(forKey: "visits") + 1, forKey: "visits")))
                    }
                }
                try await database.inBatch { batch in
                    for (collection, edit) in edits { try batch.save(document: edit, in: collection) }
                }
                try await database.performMaintenance(type: .integrityCheck)
                for (collection, edit) in edits {
                    let stored = try #require(try await collection.document(id: edit.id))
                    #expect(stored.int(forKey: "visits") >= 1, "round \(round)")
                    #expect(stored.sequence == edit.sequence)
                    #expect(stored.revisionID == edit.revisionID)
                }
            }
            // Every collection's changes, in sequence order, end with the documents saved last.
            for collection in [first, second] {
                let sequences = try await ids.asyncMap { try #require(try await collection.document(id: $0)).sequence }
                #expect(Set(sequences).count == ids.count)
            }
        }
    }

    @Test func recordsThatChangeSizeOrWhoseCursorMovedAreRewrittenWhole() async throws {
        try await withDatabase { database, _ in
            let collection = try database.defaultCollection()
            let ids = (0..<200).map { "r\($0)" }
            try await database.inBatch { batch in
                for id in ids {
                    try batch.save(
                        document: MutableDocument(id: id).setInt(0, forKey: "visits").setString("", forKey: "note"), in: collection)
                }
            }
            // Growing bodies (a new record size), then the same size; in a shuffled order, and
            // with a document saved twice in one batch (its cursor moved by the writes between).
            var random = ValueEncodingTests.SeededGenerator(seed: 5)
            for round in 1...4 {
                let order = ids.shuffled(using: &random)
                _ = try await incrementVisits(order, in: collection, grow: round % 2 == 1)
                let twice = try #require(try await collection.document(id: order[0])).toMutable()
                try await database.inBatch { batch in
                    try batch.save(document: twice.setInt(1_000 + round, forKey: "extra"), in: collection)
                    try batch.save(document: MutableDocument(id: "new-\(round)"), in: collection)
                    try batch.save(document: twice.setInt(2_000 + round, forKey: "extra"), in: collection)
                }
                #expect(try await collection.document(id: order[0])?.int(forKey: "extra") == 2_000 + round)
            }
            try await database.performMaintenance(type: .integrityCheck)
            for id in ids {
                let stored = try #require(try await collection.document(id: id))
                #expect(stored.int(forKey: "visits") == 4)
                #expect(stored.string(forKey: "note") == "++")
            }
        }
    }

    @Test func indexedUpdatesReplaceTheOldEntries() async throws {
        // With an index, the old body is read to remove the entries it made.
        try await withDatabase { database, _ in
            let collection = try database.defaultCollection()
            try await collection.createIndex(withName: "byVisits", config: ValueIndexConfiguration(["visits"]))
            let ids = (0..<50).map { "i\($0)" }
            try await database.inBatch { batch in
                for id in ids { try batch.save(document: MutableDocument(id: id).setInt(0, forKey: "visits"), in: collection) }
            }
            _ = try await incrementVisits(ids, in: collection)
            _ = try await incrementVisits(Array(ids.prefix(10)), in: collection)
            func count(_ visits: Int) async throws -> Int {
                let query = try database.createQuery("SELECT meta().id FROM _ WHERE visits = \(visits)")
                #expect(try await query.explain().contains("byVisits"), "the counts must come from the index")
                return try await query.execute().allResults().count
            }
            #expect(try await count(0) == 0)
            #expect(try await count(1) == 40)
            #expect(try await count(2) == 10)
            try await database.performMaintenance(type: .integrityCheck)
        }
    }

    @Test func aConflictedDocumentIsSavedThroughItsTree() async throws {
        // A history with branches takes the general path, which reads the whole record.
        try await withDatabase { database, _ in
            let collection = try database.defaultCollection()
            let local = MutableDocument(id: "c").setInt(1, forKey: "visits")
            try await collection.save(document: local)
            let rivalBody = try ValueEncoder.encode(.dictionary(["visits": .int(70)]))
            let rival = try RevisionID.make(parent: nil, deleted: false, body: rivalBody)
            _ = try await collection.graft([
                GraftedRevision(id: "c", revisionID: rival, isDeleted: false, body: rivalBody, history: [rival])
            ])
            let current = try #require(try await collection.document(id: "c"))
            try await database.inBatch { batch in
                try batch.save(document: current.toMutable().setInt(current.int(forKey: "visits") + 1, forKey: "visits"), in: collection)
            }
            let tree = try collection.revisionTree(id: "c")
            #expect(tree.liveLeaves.count == 2)
            #expect(try await collection.document(id: "c")?.int(forKey: "visits") == current.int(forKey: "visits") + 1)
            // Deleting the winner leaves the other branch, whose body the tree kept.
            let winner = try #require(try await collection.document(id: "c"))
            try await collection.delete(document: winner)
            let survivor = try #require(try await collection.document(id: "c"))
            #expect([1, 70].contains(survivor.int(forKey: "visits")))
            #expect(survivor.int(forKey: "visits") != winner.int(forKey: "visits"))
            try await database.performMaintenance(type: .integrityCheck)
        }
    }

    @Test func savedDocumentsKeepTheRevisionTheyWereSavedAs() async throws {
        try await withDatabase { database, _ in
            let collection = try database.defaultCollection()
            let single = MutableDocument(id: "s").setInt(1, forKey: "visits")
            try await collection.save(document: single)
            let batched = MutableDocument(id: "b").setInt(1, forKey: "visits")
            try await database.inBatch { batch in try batch.save(document: batched, in: collection) }
            for edit in [single, batched] {
                let stored = try #require(try await collection.document(id: edit.id))
                #expect(edit.revisionID == stored.revisionID)
                #expect(edit.revisionID?.hasPrefix("1-") == true)
                #expect(edit.sequence == stored.sequence)
                // The revision it knows is what concurrency control compares.
                #expect(try await collection.save(document: edit.setInt(2, forKey: "visits"), concurrencyControl: .failOnConflict))
                #expect(edit.revisionID?.hasPrefix("2-") == true)
                #expect(try await collection.document(id: edit.id)?.revisionID == edit.revisionID)
            }
            let stale = try #require(try await collection.document(id: "b")).toMutable()
            try await database.inBatch { batch in try batch.save(document: batched.setInt(3, forKey: "visits"), in: collection) }
            let refused = await expectCouchetteError(.conflict) {
                try await database.inBatch { batch in
                    try batch.save(document: stale.setInt(9, forKey: "visits"), in: collection, concurrencyControl: .failOnConflict)
                }
            }
            #expect(refused != nil)
        }
    }

    @Test func integersReadInPlaceMatchTheGenericGetters() throws {
        let values: [String: Value] = [
            "int8": .int(-7), "int16": .int(300), "int32": .int(-70_000), "int64": .int(1 << 40),
            "double": .double(-2.75), "huge": .double(1e30), "bool": .bool(true), "no": .bool(false),
            "string": .string("12"), "null": .null, "array": .array([.int(1)]), "object": .dictionary(["a": .int(1)]),
            "large": .largeInteger(try #require(LargeInteger(text: "123456789012345678901234567890"))),
        ]
        let document = Document(id: "n", revisionID: nil, sequence: 0, body: try ValueEncoder.encode(.dictionary(values)))
        for key in Array(values.keys) + ["missing"] {
            #expect(document.int(forKey: key) == Coercion.int(document.value(forKey: key)), "\(key)")
            #expect(document.int64(forKey: key) == Coercion.int64(document.value(forKey: key)), "\(key)")
        }
        #expect(document.int(forKey: "int64") == 1 << 40)
        #expect(document.int(forKey: "double") == -2)
        #expect(document.int(forKey: "bool") == 1)
        #expect(document.int(forKey: "string") == 0)
    }
}

extension Array {
    fileprivate func asyncMap<T>(_ transform: (Element) async throws -> T) async rethrows -> [T] {
        var result: [T] = []
        result.reserveCapacity(count)
        for element in self { result.append(try await transform(element)) }
        return result
    }
}
