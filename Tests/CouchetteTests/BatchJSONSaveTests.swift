import Foundation
import Testing

@testable import Couchette

/// `Batch.save(id:json:in:)`, the bulk path for JSON documents: it must store exactly what saving
/// `MutableDocument(id:json:)` stores (bodies, revision ids, sequences, counts), keep the order of
/// a batch's writes, and report bad input by document without harming the others.
@Suite(.tags(.sanitizeAddress)) struct BatchJSONSaveTests {
    /// Every JSON object of the fixtures plus hand-made shapes: unsorted and repeated keys,
    /// escapes, deep nesting, large containers (wide headers), numbers of every width.
    static func sampleObjects() throws -> [String] {
        var objects = [
            #"{}"#, #"{"a":1}"#, #"{"z":1,"a":{"y":[{"q":1,"b":2}],"c":null},"m":"x"}"#, #"{"b":1,"a":2,"b":3,"a":4}"#,
            #"{"a\"b":"c\\d","a":"\u00e9\n","\u0041":[true]}"#, #"{"n":[0,-1,127,128,-32769,2147483648,1.5,1e300,18446744073709551616]}"#,
            String(repeating: #"{"d":"#, count: 100) + "1" + String(repeating: "}", count: 100),
            "{" + (0..<3000).map { #""k\#($0)":"\#(String(repeating: "v", count: $0 % 40))""# }.joined(separator: ",") + "}",
        ]
        let data = JSONTranscodingTests.fixtureData
        for file in try FileManager.default.contentsOfDirectory(atPath: data.path) where file.hasSuffix(".json") {
            let text = try String(contentsOf: data.appendingPathComponent(file), encoding: .utf8)
            let values = (try? JSON.parse(text)) != nil ? [Substring(text)] : text.split(separator: "\n")
            for line in values where line.first == "{" { objects.append(String(line)) }
        }
        return objects
    }

    /// What a reader sees of each document: revision, sequence, deletion, body bytes.
    private func snapshot(_ collection: Collection, _ ids: [String]) async throws -> [String: String] {
        var seen: [String: String] = [:]
        for id in ids {
            guard let document = try await collection.document(id: id) else { continue }
            seen[id] = "\(document.revisionID ?? "-") \(document.sequence) \(document.body)"
        }
        return seen
    }

    @Test func storesWhatMutableDocumentsStore() async throws {
        let objects = try Self.sampleObjects()
        try #require(objects.count >= 100)
        let ids = objects.indices.map { "doc-\($0)" }
        try await withDatabase("bulk") { bulk, directory in
            let reference = try directory.open("reference")
            defer { Task { try? await reference.close() } }
            let bulkDocuments = try bulk.defaultCollection()
            let referenceDocuments = try reference.defaultCollection()
            // Twice: first new documents, then new revisions of existing ones.
            for round in 0..<2 {
                try await bulk.inBatch { batch in
                    for (id, json) in zip(ids, objects) { try batch.save(id: id, json: json, in: bulkDocuments) }
                }
                let documents = try zip(ids, objects).map { try MutableDocument(id: $0, json: $1) }
                try await reference.inBatch { batch in
                    for document in documents { try batch.save(document: document, in: referenceDocuments) }
                }
                let expected = try await snapshot(referenceDocuments, ids)
                #expect(expected.count == objects.count, "round \(round)")
                #expect(try await snapshot(bulkDocuments, ids) == expected, "round \(round)")
                #expect(try await bulkDocuments.count == UInt64(objects.count))
            }
            let rows = Array(try await bulk.createQuery("SELECT COUNT(*) AS n FROM _ WHERE meta().id LIKE 'doc-%'").execute())
            #expect(rows.first?.int(forKey: "n") == objects.count)
        }
    }

    @Test func aBadDocumentIsNamedAndLeavesTheOthersIntact() async throws {
        try await withDatabase { database, _ in
            let collection = try database.defaultCollection()
            var failures: [String] = []
            try await database.inBatch { batch in
                try batch.save(id: "before", json: #"{"b":[1,{"c":2}],"a":1}"#, in: collection)
                for (id, json) in [("open", #"{"x":[1,{"y":"#), ("array", "[1,2]"), ("trailing", #"{"a":1} x"#), ("empty", "")] {
                    do {
                        try batch.save(id: id, json: json, in: collection)
                    } catch let error as CouchetteError {
                        #expect(error.code == .invalidParameter)
                        failures.append(error.message)
                    }
                }
                try batch.save(id: "after", json: #"{"z":{"q":[true]},"a":"é"}"#, in: collection)
            }
            #expect(failures.count == 4)
            #expect(failures[0].contains("document 'open'") && failures[0].contains("byte"))
            #expect(failures[1].contains("document 'array'") && failures[1].contains("must be an object"))
            #expect(try await collection.count == 2)
            // The document after the failures is stored exactly as on its own.
            let after = try #require(try await collection.document(id: "after"))
            let alone = try MutableDocument(id: "after", json: #"{"z":{"q":[true]},"a":"é"}"#)
            #expect(after.body == (try alone.encodeBody()))
            #expect(after.revisionID == (try RevisionID.make(parent: nil, deleted: false, body: try alone.encodeBody())))
            #expect(after.toJSON() == #"{"a":"é","z":{"q":[true]}}"#)
            // Uncaught, the error fails the whole batch: nothing of it is written.
            await #expect(throws: CouchetteError.self) {
                try await database.inBatch { batch in
                    try batch.save(id: "kept-out", json: #"{"a":1}"#, in: collection)
                    try batch.save(id: "bad", json: #"{"a":"#, in: collection)
                }
            }
            #expect(try await collection.document(id: "kept-out") == nil)
        }
    }

    @Test func badIdsAndDeepNestingAreRefused() async throws {
        try await withDatabase { database, _ in
            let collection = try database.defaultCollection()
            let tooDeep =
                String(repeating: #"{"a":"#, count: JSON.maximumDepth + 2) + "1" + String(repeating: "}", count: JSON.maximumDepth + 2)
            try await database.inBatch { batch in
                for id in ["", String(repeating: "x", count: StoreLayout.maximumDocumentIDLength + 1)] {
                    #expect(throws: CouchetteError.self) { try batch.save(id: id, json: "{}", in: collection) }
                }
                let error = #expect(throws: CouchetteError.self) { try batch.save(id: "deep", json: tooDeep, in: collection) }
                #expect(error?.message.contains("document 'deep'") == true)
                let generated = try batch.save(id: nil, json: #"{"g":1}"#, in: collection)
                #expect(generated.hasPrefix("~") && generated.count == 23)
            }
            #expect(try await collection.count == 1)
        }
    }

    @Test func existingDocumentsFollowConcurrencyControl() async throws {
        try await withDatabase { database, _ in
            let collection = try database.defaultCollection()
            try await collection.save(document: MutableDocument(id: "live").setInt(1, forKey: "v"))
            try await collection.save(document: MutableDocument(id: "gone").setInt(1, forKey: "v"))
            try await collection.delete(document: try #require(try await collection.document(id: "gone")))
            let live = try #require(try await collection.document(id: "live"))
            // Under failOnConflict a deleted document is replaced, a live one fails the batch whole.
            await #expect(throws: CouchetteError.self) {
                try await database.inBatch { batch in
                    try batch.save(id: "new", json: #"{"v":2}"#, in: collection, concurrencyControl: .failOnConflict)
                    try batch.save(id: "live", json: #"{"v":2}"#, in: collection, concurrencyControl: .failOnConflict)
                }
            }
            #expect(try await collection.document(id: "new") == nil)
            try await database.inBatch { batch in
                try batch.save(id: "gone", json: #"{"v":2}"#, in: collection, concurrencyControl: .failOnConflict)
                try batch.save(id: "live", json: #"{"v":2}"#, in: collection)
            }
            let replaced = try #require(try await collection.document(id: "live"))
            #expect(replaced.int(forKey: "v") == 2)
            #expect(RevisionID.generation(of: replaced.revisionID ?? "") == 2)
            #expect(replaced.revisionID == (try RevisionID.make(parent: live.revisionID, deleted: false, body: replaced.body)))
            let revived = try #require(try await collection.document(id: "gone"))
            #expect(RevisionID.generation(of: revived.revisionID ?? "") == 3)
            #expect(try await collection.count == 2)
        }
    }

    @Test func writesKeepTheirOrderInsideABatch() async throws {
        try await withDatabase { database, _ in
            let first = try database.defaultCollection()
            let second = try await database.createCollection(name: "second")
            try await collection(first, saving: "existing")
            let existing = try #require(try await first.document(id: "existing"))
            try await database.inBatch { batch in
                try batch.save(id: "a", json: #"{"n":1}"#, in: first)
                try batch.save(id: "a", json: #"{"n":2}"#, in: second)
                try batch.save(id: "b", json: #"{"n":3}"#, in: first)
                try batch.delete(document: existing, in: first)
                try batch.save(id: "existing", json: #"{"n":4}"#, in: first)
                try batch.purge(id: "b", in: first)
                try batch.save(id: "a", json: #"{"n":5}"#, in: first)
            }
            #expect(try await first.document(id: "a")?.int(forKey: "n") == 5)
            #expect(try await first.document(id: "a")?.revisionID?.hasPrefix("2-") == true)
            #expect(try await second.document(id: "a")?.int(forKey: "n") == 2)
            #expect(try await first.document(id: "b") == nil)
            let revived = try #require(try await first.document(id: "existing"))
            #expect(revived.int(forKey: "n") == 4 && revived.revisionID?.hasPrefix("3-") == true)
            #expect(try await first.count == 2)
            #expect(try await second.count == 1)
            // Every sequence is used once, in order, and the last one is the collection's.
            let sequences = try await [first.document(id: "a")?.sequence, first.document(id: "existing")?.sequence]
            #expect(sequences.compactMap { $0 }.sorted() == [5, 6])
        }
    }

    private func collection(_ collection: Collection, saving id: String) async throws {
        try await collection.save(document: MutableDocument(id: id).setString("x", forKey: "old"))
    }

    @Test func observersAndIndexesSeeBulkSaves() async throws {
        try await withDatabase { database, _ in
            let collection = try database.defaultCollection()
            try await collection.createIndex(withName: "byN", config: ValueIndexConfiguration(["n"]))
            let changes = collection.changes()
            try await database.inBatch { batch in
                for number in 0..<50 { try batch.save(id: "d\(number)", json: #"{"n":\#(number)}"#, in: collection) }
            }
            var iterator = changes.makeAsyncIterator()
            let change = try #require(await iterator.next())
            #expect(change.documentIDs == (0..<50).map { "d\($0)" })
            let query = try database.createQuery("SELECT meta().id AS id FROM _ WHERE n >= 45 ORDER BY n")
            #expect(try await query.explain().contains("byN"))
            #expect(try await query.execute().map { $0.string(forKey: "id") ?? "" } == (45..<50).map { "d\($0)" })
        }
    }

    @Test func aBatchLargerThanOneBufferKeepsEveryDocumentInOrder() async throws {
        try await withDatabase { database, _ in
            let collection = try database.defaultCollection()
            let filler = String(repeating: "x", count: 4000)
            let count = JSONDocumentBatch.Builder.bufferLimit / 4000 * 2 + 10  // a little over two buffers
            try await database.inBatch { batch in
                for number in 0..<count {
                    try batch.save(id: "big-\(number)", json: #"{"n":\#(number),"fill":"\#(filler)"}"#, in: collection)
                }
                // Written again in a later buffer: a second revision, after the first.
                try batch.save(id: "big-0", json: #"{"n":-1}"#, in: collection)
            }
            #expect(try await collection.count == UInt64(count))
            let first = try #require(try await collection.document(id: "big-0"))
            #expect(first.int(forKey: "n") == -1 && first.revisionID?.hasPrefix("2-") == true)
            #expect(first.sequence == UInt64(count + 1))
            let last = try #require(try await collection.document(id: "big-\(count - 1)"))
            #expect(last.sequence == UInt64(count) && last.string(forKey: "fill") == filler)
        }
    }

    @Test func aClosedBatchRefusesJSON() async throws {
        try await withDatabase { database, _ in
            let collection = try database.defaultCollection()
            var kept: Batch?
            try await database.inBatch { batch in kept = batch }
            #expect(throws: CouchetteError.self) { try kept?.save(id: "late", json: "{}", in: collection) }
        }
    }
}
