import Foundation
import Testing

@testable import Couchette

/// A save without a base computes its document's first revision (the MD5 of the body) where the
/// write is made, before the commit; the writer uses it only when the document does not exist.
@Suite struct NewDocumentRevisionTests {
    /// A body unlike any other test's, so that its revision is this body's alone.
    private static let body = try! ValueEncoder.encode(.dictionary(["name": .string("new-document-revision"), "n": .int(7)]))

    @Test func onlySavesWithoutABaseGetARevisionInAdvance() throws {
        let spec = CollectionSpec(scope: Catalog.defaultName, name: Catalog.defaultName, number: 0)
        let mixed = PendingWrite([
            .save(spec, id: "new", body: Self.body, base: nil, control: .lastWriteWins),
            .purge(spec, id: "gone"),
            .save(spec, id: "edited", body: Self.body, base: "1-abc", control: .failOnConflict),
        ])
        #expect(mixed.newDocumentRevisions.count == 3)
        let expected = try RevisionID.makeStored(storedParent: nil, deleted: false, body: Self.body).text
        #expect(mixed.precomputedRevision(at: 0, replacing: nil)?.text == expected)
        #expect(mixed.precomputedRevision(at: 1, replacing: nil) == nil)
        #expect(mixed.precomputedRevision(at: 2, replacing: nil) == nil)
        #expect(mixed.precomputedRevision(at: 3, replacing: nil) == nil)
        // Nothing to compute: no per-operation list at all (a batch of edits or purges pays nothing).
        let edits = PendingWrite([
            .save(spec, id: "edited", body: Self.body, base: "1-abc", control: .failOnConflict), .purge(spec, id: "x"),
        ])
        #expect(edits.newDocumentRevisions.isEmpty)
    }

    @Test func aSavedDocumentHasTheRevisionComputedBeforeTheCommit() async throws {
        try await withDatabase { database, _ in
            let collection = try database.defaultCollection()
            let write = PendingWrite([.save(collection.spec, id: "doc", body: Self.body, base: nil, control: .lastWriteWins)])
            let outcomes = try await database.perform(write)
            let stored = try #require(try await collection.document(id: "doc"))
            #expect(outcomes == [.saved(revisionID: stored.revisionID ?? "", sequence: 1)])
            #expect(stored.revisionID == write.precomputedRevision(at: 0, replacing: nil)?.text)
        }
    }

    /// The writer takes the revision it is given for a new document (it does not compute it
    /// again), and ignores it for a document that exists, whose revision follows the stored one.
    @Test func theWriterUsesTheGivenRevisionOnlyForANewDocument() async throws {
        try await withDatabase { database, _ in
            let collection = try database.defaultCollection()
            let spec = collection.spec
            let given = StoredRevisionID.packed(generation: 1, digest: (0x0102_0304_0506_0708, 0x1112_1314_1516_1718))
            func save(_ id: String) throws -> WriteOutcome {
                // Offered for a new document only: the writer asks with the revision it found.
                try Self.apply(.save(spec, id: id, body: Self.body, base: nil, control: .lastWriteWins), in: database) {
                    $0 == nil ? given : nil
                }
            }
            #expect(try save("fresh") == .saved(revisionID: given.text, sequence: 1))
            #expect(try await collection.document(id: "fresh")?.revisionID == given.text)

            try await collection.save(document: MutableDocument(id: "existing"))
            let before = try #require(try await collection.document(id: "existing")?.revisionID)
            let outcome = try save("existing")
            let after = try #require(try await collection.document(id: "existing")?.revisionID)
            #expect(outcome == .saved(revisionID: after, sequence: 3))
            #expect(after != given.text)
            #expect(RevisionID.generation(of: after) == 2)
            #expect(after != before)
        }
    }
}

extension NewDocumentRevisionTests {
    /// Applies `operation` alone in a write transaction of its own, the writer being offered
    /// `precomputed` as it would be a ``PendingWrite``'s revisions computed before the commit.
    static func apply(
        _ operation: WriteOperation, in database: Database, precomputed: (StoredRevisionID?) -> StoredRevisionID?
    ) throws -> WriteOutcome {
        let core = database.core
        return try core.environment.write { txn in
            let collections = try core.catalog.current(in: txn, store: core.store)
            let context = WriteContext(txn: txn, tables: core.environment.tables, now: 0, collections: collections)
            let outcome = try core.store.apply(operation, in: context, precomputed: precomputed)
            try context.flush()
            return outcome
        }
    }
}
