import Foundation
import Testing

@testable import Couchette

/// New `MutableDocument`s and unbound models saved in a batch join the run the writer stores as
/// it stores JSON documents (one operation, digests hashed on another thread): each object must
/// still learn exactly the revision and sequence that were stored, whether it was new, saved twice,
/// or its id was taken by then, and the run must keep its place among the batch's other writes.
@Suite(.tags(.concurrency, .sanitizeAddress)) struct BatchNewDocumentRunTests {
    private func document(_ number: Int) -> MutableDocument {
        MutableDocument(id: "doc-\(number)")
            .setString("title \(number)", forKey: "title")
            .setInt(number, forKey: "n")
            .setValue(["a", String(repeating: "x", count: number % 300)], forKey: "tags")
    }

    /// Each document's stored revision and sequence are what the object learned.
    private func expectBound(_ documents: [MutableDocument], in collection: Collection) async throws {
        for document in documents {
            let stored = try #require(try await collection.document(id: document.id))
            #expect(document.revisionID == stored.revisionID, "\(document.id)")
            #expect(document.sequence == stored.sequence, "\(document.id)")
        }
    }

    @Test(arguments: [1, 40, 3_000])
    func newDocumentsBecomeOneOperationAndLearnTheirRevisions(count: Int) async throws {
        try await withDatabase { database, _ in
            let collection = try database.defaultCollection()
            let documents = (0..<count).map(document)
            try await database.inBatch { batch in
                for document in documents { try batch.save(document: document, in: collection) }
                #expect(batch.operations.count == 0)  // the run is still open
                batch.finishJSONDocuments()
                #expect(batch.operations.count == 1)
            }
            #expect(try await collection.count == count)
            try await expectBound(documents, in: collection)
            // The revision a document saved on its own gets: the same body, the same digest.
            let alone = document(count - 1)
            try await withDatabase("other") { other, _ in try await other.defaultCollection().save(document: alone) }
            #expect(documents[count - 1].revisionID == alone.revisionID)
            #expect(documents.allSatisfy { $0.revisionID?.hasPrefix("1-") == true })
        }
    }

    @Test func documentsPastAFullBufferStartANewRunAndStillLearnTheirRevisions() async throws {
        try await withDatabase { database, _ in
            let collection = try database.defaultCollection()
            // 4 KiB bodies: the run's buffer fills (JSONDocumentBatch.Builder.bufferLimit) and a
            // second run starts, so trackers point into two operations.
            let count = JSONDocumentBatch.Builder.bufferLimit / 4_096 + 40
            let documents = (0..<count).map { number in
                MutableDocument(id: "big-\(number)").setString(String(repeating: "b", count: 4_096), forKey: "pad").setInt(
                    number, forKey: "n")
            }
            try await database.inBatch { batch in
                for document in documents { try batch.save(document: document, in: collection) }
                #expect(batch.operations.count == 1)  // the full one; the second is still open
            }
            #expect(try await collection.count == count)
            try await expectBound(
                [documents[0], documents[count / 2], documents[count - 41], documents[count - 40], documents[count - 1]], in: collection)
            #expect(documents.allSatisfy { $0.revisionID?.hasPrefix("1-") == true })
            #expect(Set(documents.map(\.sequence)).count == count)
        }
    }

    @Test func aDocumentSavedTwiceOrAlreadyStoredGetsARevisionOfTheCurrentOne() async throws {
        try await withDatabase { database, _ in
            let collection = try database.defaultCollection()
            try await collection.save(document: MutableDocument(id: "taken").setInt(0, forKey: "n"))
            let twice = MutableDocument(id: "twice").setInt(1, forKey: "n")
            let taken = MutableDocument(id: "taken").setInt(2, forKey: "n")
            let others = (0..<50).map(document)
            try await database.inBatch { batch in
                try batch.save(document: others[0], in: collection)
                try batch.save(document: twice, in: collection)
                try batch.save(document: taken, in: collection)
                for document in others.dropFirst() { try batch.save(document: document, in: collection) }
                twice.setInt(3, forKey: "n")
                try batch.save(document: twice, in: collection)
            }
            try await expectBound(others + [twice, taken], in: collection)
            #expect(twice.revisionID?.hasPrefix("2-") == true)
            #expect(taken.revisionID?.hasPrefix("2-") == true)
            #expect(try await collection.document(id: "twice")?.int(forKey: "n") == 3)
        }
    }

    @Test func failOnConflictRefusesATakenIdAndWritesNothing() async throws {
        try await withDatabase { database, _ in
            let collection = try database.defaultCollection()
            try await collection.save(document: MutableDocument(id: "taken"))
            let documents = (0..<10).map(document) + [MutableDocument(id: "taken")]
            await #expect(throws: CouchetteError.self) {
                try await database.inBatch { batch in
                    for document in documents { try batch.save(document: document, in: collection, concurrencyControl: .failOnConflict) }
                }
            }
            #expect(try await collection.count == 1)
            #expect(documents.allSatisfy { $0.revisionID == nil })
        }
    }

    @Test func theRunKeepsItsPlaceAmongOtherWrites() async throws {
        try await withDatabase { database, _ in
            let collection = try database.defaultCollection()
            let stored = MutableDocument(id: "stored").setInt(0, forKey: "n")
            try await collection.save(document: stored)
            let edited = try #require(try await collection.document(id: "stored")).toMutable().setInt(1, forKey: "n")
            let first = (0..<5).map(document)
            let second = (5..<10).map(document)
            let gone = MutableDocument(id: "gone")
            try await database.inBatch { batch in
                for document in first { try batch.save(document: document, in: collection) }
                try batch.save(document: edited, in: collection)  // bound to a revision: an operation of its own
                try batch.save(document: gone, in: collection)
                try batch.purge(id: "gone", in: collection)
                for document in second { try batch.save(document: document, in: collection) }
            }
            try await expectBound(first + second + [edited], in: collection)
            #expect(try await collection.document(id: "gone") == nil)
            #expect(first.last!.sequence < edited.sequence && edited.sequence < second.first!.sequence)
        }
    }

    @Test func modelsNotBoundToARevisionJoinTheRun() async throws {
        try await withDatabase { database, _ in
            let collection = try database.defaultCollection()
            let tasks = (0..<100).map { TodoTask(title: "task \($0)") }
            let named = Checklist(id: "list", name: "groceries", items: ["milk"])
            try await database.inBatch { batch in
                for task in tasks { try batch.save(from: task, in: collection) }
                try batch.save(from: named, in: collection)
                named.items.append("eggs")
                try batch.save(from: named, in: collection)
                batch.finishJSONDocuments()
                #expect(batch.operations.count == 1)
            }
            for task in tasks {
                let id = try #require(task.id)
                let stored = try #require(try await collection.document(id: id))
                #expect(try boundRevision(of: task) == stored.revisionID)
            }
            let list = try #require(try await collection.document(id: "list"))
            #expect(try boundRevision(of: named) == list.revisionID)
            #expect(list.revisionID?.hasPrefix("2-") == true)
        }
    }

    @Test func aDocumentThatFailsToEncodeLeavesNothingInTheNextOnesBody() async throws {
        try await withDatabase { database, _ in
            let collection = try database.defaultCollection()
            let before = document(1)
            let bad = MutableDocument(id: "bad").setArray(MutableArrayObject().addString("deep").addDouble(.nan), forKey: "a")
            let after = MutableDocument(id: "after").setString("short", forKey: "s")
            try await database.inBatch { batch in
                try batch.save(document: before, in: collection)
                #expect(throws: CouchetteError.self) { try batch.save(document: bad, in: collection) }
                try batch.save(document: after, in: collection)
            }
            #expect(try await collection.count == 2)
            let stored = try #require(try await collection.document(id: "after"))
            #expect(stored.toDictionary() as NSDictionary == ["s": "short"] as NSDictionary)
            #expect(stored.revisionID == (try RevisionID.make(parent: nil, deleted: false, body: after.encodeBody())))
            try await expectBound([before, after], in: collection)
        }
    }

    @Test func aBadIdIsRefusedWhenSaved() async throws {
        try await withDatabase { database, _ in
            let collection = try database.defaultCollection()
            let long = String(repeating: "i", count: StoreLayout.maximumDocumentIDLength + 1)
            try await database.inBatch { batch in
                #expect(throws: CouchetteError.self) { try batch.save(document: MutableDocument(id: long), in: collection) }
                #expect(throws: CouchetteError.self) { try batch.save(from: Checklist(id: "", name: "none"), in: collection) }
                try batch.save(document: document(1), in: collection)
            }
            #expect(try await collection.count == 1)
        }
    }
}
