import Foundation
import Testing

@testable import Couchette

/// A batch computes the new revision of each document it updates while it is filled (on the
/// digest thread, a chunk of updates at a time), with the revision the document was read at as
/// parent; the writer uses it only when it finds the document still at that revision.
@Suite(.tags(.concurrency)) struct UpdateRevisionTests {
    private static func body(_ n: Int) -> [UInt8] {
        try! ValueEncoder.encode(.dictionary(["name": .string("update-revision"), "n": .int(Int64(n))]))
    }

    private static func parent(_ n: Int) -> StoredRevisionID {
        .packed(generation: UInt32(n % 7 + 1), digest: (UInt64(n), 0xABCD))
    }

    /// Chunks handed to the digest thread and the last one hashed at close give the revisions the
    /// writer would compute, for the parent they were made for only; other operations have none.
    @Test func revisionsAreComputedForTheirParentsOnly() throws {
        var builder = UpdateRevisions.Builder()
        let count = UpdateRevisions.chunkCount * 2 + 5
        // Operations 0, 3, 6, …: updates; the others something else.
        for n in 0..<count { builder.add(operation: 3 * n, parent: Self.parent(n), body: Self.body(n)) }
        let finished = builder.finished()
        let revisions = try #require(finished)
        for n in 0..<count {
            let expected = try RevisionID.makeStored(storedParent: Self.parent(n), deleted: false, body: Self.body(n))
            #expect(revisions.covers(operation: 3 * n))
            #expect(revisions.revision(ofOperation: 3 * n, replacing: Self.parent(n)) == expected)
            #expect(revisions.revision(ofOperation: 3 * n, replacing: Self.parent(n + 1)) == nil)
            #expect(!revisions.covers(operation: 3 * n + 1))
            #expect(revisions.revision(ofOperation: 3 * n + 1, replacing: Self.parent(n)) == nil)
        }
        #expect(revisions.revision(ofOperation: 3 * count, replacing: Self.parent(0)) == nil)
        var empty = UpdateRevisions.Builder()
        #expect(empty.finished() == nil)
    }

    /// Updates saved without a base (`.lastWriteWins`) are not hashed again as new documents.
    @Test func updatesGetNoNewDocumentRevision() throws {
        let spec = CollectionSpec(scope: Catalog.defaultName, name: Catalog.defaultName, number: 0)
        var builder = UpdateRevisions.Builder()
        builder.add(operation: 1, parent: Self.parent(1), body: Self.body(1))
        let write = PendingWrite(
            [
                .save(spec, id: "new", body: Self.body(0), base: nil, control: .lastWriteWins),
                .save(spec, id: "updated", body: Self.body(1), base: nil, control: .lastWriteWins),
            ], isAtomic: true, updateRevisions: builder.finished())
        let first = try RevisionID.makeStored(storedParent: nil, deleted: false, body: Self.body(0))
        #expect(write.newDocumentRevisions.count == 2)
        #expect(write.precomputedRevision(at: 0, replacing: nil) == first)
        #expect(write.precomputedRevision(at: 1, replacing: nil) == nil)
        let update = try RevisionID.makeStored(storedParent: Self.parent(1), deleted: false, body: Self.body(1))
        #expect(write.precomputedRevision(at: 1, replacing: Self.parent(1)) == update)
        #expect(write.precomputedRevision(at: 0, replacing: Self.parent(1)) == nil)
    }

    /// The writer takes the revision offered for the revision it finds; offered for another one,
    /// it computes the revision from the stored one.
    @Test func theWriterUsesTheGivenRevisionOnlyForItsParent() async throws {
        try await withDatabase { database, _ in
            let collection = try database.defaultCollection()
            try await collection.save(document: MutableDocument(id: "doc").setInt(1, forKey: "n"))
            let read = try #require(try await collection.document(id: "doc")?.revision)
            let given = StoredRevisionID.packed(generation: 2, digest: (0x0102_0304_0506_0708, 0x1112_1314_1516_1718))
            func save(offeredFor parent: StoredRevisionID) throws -> WriteOutcome {
                let operation = WriteOperation.save(collection.spec, id: "doc", body: Self.body(2), base: nil, control: .lastWriteWins)
                return try NewDocumentRevisionTests.apply(operation, in: database) { $0 == parent ? given : nil }
            }
            #expect(try save(offeredFor: read) == .saved(revision: given, sequence: 2))
            #expect(try await collection.document(id: "doc")?.revisionID == given.text)
            // Offered for the revision read earlier, no longer the stored one: not taken.
            let outcome = try save(offeredFor: read)
            let stored = try #require(try await collection.document(id: "doc"))
            let expected = try RevisionID.makeStored(storedParent: given, deleted: false, body: Self.body(2))
            #expect(outcome == .saved(revision: expected, sequence: 3))
            #expect(stored.revision == expected)
            try await database.performMaintenance(type: .integrityCheck)
        }
    }

    /// A batch of updates (several chunks), some of whose documents changed, were deleted or were
    /// purged after they were read, and one saved twice: every document ends at the revision its
    /// stored history gives, and its object learns it.
    @Test func aBatchOfUpdatesFollowsTheStoredRevisions() async throws {
        try await withDatabase { database, _ in
            let collection = try database.defaultCollection()
            let ids = (0..<(UpdateRevisions.chunkCount * 3 + 10)).map { String(format: "u%04d", $0) }
            try await database.inBatch { batch in
                for id in ids { try batch.save(document: MutableDocument(id: id).setInt(0, forKey: "visits"), in: collection) }
            }
            var edits: [MutableDocument] = []
            for id in ids {
                let document = try #require(try await collection.document(id: id))
                edits.append(document.toMutable().setInt(document.int(forKey: "visits") + 1, forKey: "visits"))
            }
            // Changed, deleted and purged after they were read.
            try await collection.save(document: try #require(try await collection.document(id: ids[5])).toMutable().setInt(9, forKey: "x"))
            try await collection.delete(document: try #require(try await collection.document(id: ids[70])))
            try await collection.purge(id: ids[140])
            var parents: [String: String] = [:]
            for id in ids { parents[id] = try collection.storedState(id: id).revisionID }  // tombstones included
            try await database.inBatch { batch in
                for edit in edits { try batch.save(document: edit, in: collection) }
                edits[3].setInt(50, forKey: "visits")
                try batch.save(document: edits[3], in: collection)  // twice: on top of its first save
            }
            for (index, edit) in edits.enumerated() {
                let stored = try #require(try await collection.document(id: edit.id))
                #expect(stored.revisionID == edit.revisionID, "\(edit.id)")
                let parent: String?
                if index == 3 {
                    // The second save builds on the first one's revision.
                    let first = try RevisionID.make(
                        parent: parents[edit.id], deleted: false,
                        body: try ValueEncoder.encode(.dictionary(["visits": .int(1)])))
                    parent = first
                } else {
                    parent = parents[edit.id]
                }
                let expected = try RevisionID.make(parent: parent, deleted: false, body: stored.body)
                #expect(stored.revisionID == expected, "\(edit.id)")
            }
            #expect(RevisionID.generation(of: try #require(try await collection.document(id: ids[140])?.revisionID)) == 1)
            #expect(RevisionID.generation(of: try #require(try await collection.document(id: ids[5])?.revisionID)) == 3)
            #expect(try await collection.document(id: ids[3])?.int(forKey: "visits") == 50)
            try await database.performMaintenance(type: .integrityCheck)
        }
    }

    /// A batch whose body fails after queueing chunks of updates writes nothing.
    @Test func anAbandonedBatchWritesNoUpdate() async throws {
        struct Stop: Error {}
        try await withDatabase { database, _ in
            let collection = try database.defaultCollection()
            let ids = (0..<(UpdateRevisions.chunkCount * 2)).map { "a\($0)" }
            let edits = try await collection.savedForUpdates(ids).map { $0.setInt(7, forKey: "visits") }
            await #expect(throws: Stop.self) {
                try await database.inBatch { batch in
                    for edit in edits { try batch.save(document: edit, in: collection) }
                    throw Stop()
                }
            }
            for id in ids { #expect(try await collection.document(id: id)?.int(forKey: "visits") == 0) }
        }
    }
}

extension Collection {
    /// Saves a document `{"visits": 0}` for each of `ids`, in one batch, and returns each as read
    /// back: ready to be updated.
    func savedForUpdates(_ ids: [String]) async throws -> [MutableDocument] {
        try await database.inBatch { batch in
            for id in ids { try batch.save(document: MutableDocument(id: id).setInt(0, forKey: "visits"), in: self) }
        }
        var documents: [MutableDocument] = []
        for id in ids { documents.append(try #require(try await document(id: id)).toMutable()) }
        return documents
    }
}
