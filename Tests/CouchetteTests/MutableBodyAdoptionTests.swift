import Foundation
import Testing

@testable import Couchette

/// A document whose properties are all plain values takes the body a save encodes as its stored
/// form (`MutableDictionaryObject.adopt(encoding:)`): its entries are freed, so a document kept
/// after its save holds one buffer. It must read, edit and save exactly as before, and
/// keep its entries whenever they hold an object the caller may still edit or a value the body
/// does not hold.
@Suite(.tags(.sanitizeAddress)) struct MutableBodyAdoptionTests {
    private static let created = Date(timeIntervalSince1970: 1_709_649_015.25)

    private func task() -> MutableDocument {
        MutableDocument(id: "task")
            .setString("buy milk", forKey: "title")
            .setBoolean(false, forKey: "completed")
            .setInt(3, forKey: "priority")
            .setValue(["home", "urgent"], forKey: "tags")
            .setDate(Self.created, forKey: "createdAt")
            .setDouble(1.0, forKey: "weight")
            .setValue(["city": "Lyon"], forKey: "address")
    }

    @Test func aSavedDocumentOfPlainValuesKeepsItsBodyNotItsEntries() async throws {
        let expected = task().toDictionary() as NSDictionary
        try await withDatabase { database, _ in
            let collection = try database.defaultCollection()
            let document = task()
            try await database.inBatch { batch in try batch.save(document: document, in: collection) }
            #expect(document.root.changedEntries.isEmpty)
            let stored = try #require(try await collection.document(id: "task"))
            #expect(document.root.pristineBody == stored.body)
            #expect(document.toDictionary() as NSDictionary == expected)
            #expect(document.value(forKey: "weight") as? Double == 1.0)
            #expect(document.date(forKey: "createdAt") == Self.created)
            #expect(document.array(forKey: "tags")?.toArray() as? [String] == ["home", "urgent"])
        }
    }

    @Test func anAdoptedDocumentIsEditedAndSavedAgain() async throws {
        try await withDatabase { database, _ in
            let collection = try database.defaultCollection()
            let document = task()
            try await collection.save(document: document)
            #expect(document.root.changedEntries.isEmpty)
            document.setString("buy oat milk", forKey: "title").removeValue(forKey: "weight")
            document.array(forKey: "tags")?.addString("later")
            try await collection.save(document: document)
            let stored = try #require(try await collection.document(id: "task"))
            #expect(stored.string(forKey: "title") == "buy oat milk")
            #expect(stored.value(forKey: "weight") == nil)
            #expect(stored.array(forKey: "tags")?.toArray() as? [String] == ["home", "urgent", "later"])
            #expect(stored.int(forKey: "priority") == 3)
        }
    }

    @Test func aMutableContainerKeepsTheEntriesSoItsLaterEditsAreSaved() async throws {
        try await withDatabase { database, _ in
            let collection = try database.defaultCollection()
            let tags = MutableArrayObject().addString("home")
            let document = MutableDocument(id: "linked").setArray(tags, forKey: "tags").setInt(1, forKey: "n")
            try await collection.save(document: document)
            #expect(!document.root.changedEntries.isEmpty)
            tags.addString("urgent")  // the caller's object is still the document's array
            try await collection.save(document: document)
            let stored = try #require(try await collection.document(id: "linked"))
            #expect(stored.array(forKey: "tags")?.toArray() as? [String] == ["home", "urgent"])
        }
    }

    @Test func aLenientSnapshotAdoptsNothing() throws {
        let document = MutableDocument(id: "nan").setDouble(.nan, forKey: "x").setInt(1, forKey: "n")
        let snapshot = Document(document)  // writes null for the NaN
        #expect(snapshot.value(forKey: "x") is NSNull)
        #expect(!document.root.changedEntries.isEmpty)
        #expect(throws: CouchetteError.self) { try document.encodeBody() }  // still reported
    }

    @Test func aBodyThatCannotBeStoredAdoptsNothing() throws {
        let document = MutableDocument(id: "bad").setValue(Double.infinity, forKey: "x")
        #expect(throws: CouchetteError.self) { try document.encodeBody() }
        #expect(!document.root.changedEntries.isEmpty)
    }
}
