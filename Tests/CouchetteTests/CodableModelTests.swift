import Foundation
import Testing

@testable import Couchette

@Suite struct CodableModelTests {
    // MARK: - The seed's examples, adapted to async/await

    @Test func theSeedsExamplesWork() async throws {
        try await withDatabase { database, _ in
            let collection = try await database.createCollection(name: "tasks")
            let task = TodoTask(title: "Buy milk")
            try await collection.save(from: task)

            let document = try await collection.document(id: task.id!, as: TodoTask.self)
            #expect(document?.title == "Buy milk")

            let resolved = try await collection.save(from: task) { newTask, existingTask in
                newTask.title = "New Task"
                newTask.completed = false
                return true
            }
            #expect(resolved)
            #expect(try await collection.save(from: task, concurrencyControl: .failOnConflict))
            #expect(try await collection.delete(for: task, concurrencyControl: .failOnConflict))
            try await collection.save(from: task)
            try await collection.delete(for: task)
            try await collection.purge(for: task)
            #expect(try await collection.count == 0)
        }
    }

    // MARK: - Round trips

    @Test func everySupportedTypeRoundTripsThroughACollection() async throws {
        try await withDatabase { database, _ in
            let collection = try database.defaultCollection()
            let original = EveryType()
            original.id = "every"
            try await collection.save(from: original)
            let copy = try #require(try await collection.document(id: "every", as: EveryType.self))
            #expect(copy.id == "every")
            #expect(copy.string == original.string && copy.int == original.int && copy.int64 == original.int64)
            #expect(copy.uint64 == original.uint64 && copy.float == original.float && copy.double == original.double)
            #expect(abs(copy.date.timeIntervalSince(original.date)) < 0.001)
            #expect(copy.url == original.url && copy.uuid == original.uuid && copy.decimal == original.decimal)
            #expect(copy.priority == original.priority && copy.status == original.status && copy.shape == original.shape)
            #expect(copy.point == original.point && copy.tags == original.tags && copy.matrix == original.matrix)
            #expect(copy.scores == original.scores && copy.byNumber == original.byNumber)
            #expect(copy.optionalPresent == "here" && copy.optionalNil == nil && copy.arrayOfOptionals == [1, nil, 3])

            // Stored the Couchbase Lite way, readable with the document API.
            let stored = try #require(try await collection.document(id: "every"))
            #expect(stored.string(forKey: "date") == "2023-11-14T22:13:20.123Z")
            #expect(stored.date(forKey: "date") != nil)
            #expect(stored.contains(key: "optionalNil"))
            #expect(stored.value(forKey: "optionalNil") is NSNull)
            #expect(!stored.contains(key: "id"))
        }
    }

    @Test func nestedModelsArraysAndDictionariesOfModelsRoundTrip() async throws {
        try await withDatabase { database, _ in
            let collection = try database.defaultCollection()
            let person = Person(
                id: "ada", name: "Ada",
                contacts: [Contact(id: "c1", name: "Bob", email: "bob@example.com"), Contact(name: "Cy")],
                best: Contact(id: "c9", name: "Di"),
                byRole: ["boss": Contact(id: "c2", name: "Eve"), "peer": Contact(name: "Fay")])
            try await collection.save(from: person)
            let copy = try #require(try await collection.document(id: "ada", as: Person.self))
            #expect(copy.id == "ada")
            #expect(copy.contacts == person.contacts)
            #expect(copy.best == person.best)
            #expect(copy.byRole == person.byRole)
            let stored = try #require(try await collection.document(id: "ada"))
            #expect(stored["contacts"][0]["id"].string == "c1")
            #expect(stored["byRole"]["boss"]["id"].string == "c2")
            #expect(!stored.contains(key: "id"))
        }
    }

    @Test func optionalsPresentAndNilKeepTheirKeys() async throws {
        try await withDatabase { database, _ in
            let collection = try database.defaultCollection()
            let done = TodoTask(title: "done", completed: true)
            let open = TodoTask(title: "open")
            try await collection.save(from: done)
            try await collection.save(from: open)
            let storedOpen = try #require(try await collection.document(id: open.id!))
            #expect(storedOpen.keys.sorted() == ["completed", "title"])
            #expect(storedOpen.value(forKey: "completed") is NSNull)
            #expect(try await collection.document(id: open.id!, as: TodoTask.self)?.completed == nil)
            #expect(try await collection.document(id: done.id!, as: TodoTask.self)?.completed == true)
        }
    }

    @Test func aDocumentThatDoesNotFitTheModelThrowsADecodingError() async throws {
        try await withDatabase { database, _ in
            let collection = try database.defaultCollection()
            try await collection.save(document: MutableDocument(id: "bad").setString("Ada", forKey: "name").setInt(5, forKey: "contacts"))
            let error = try await #require(throws: DecodingError.self) {
                _ = try await collection.document(id: "bad", as: Person.self)
            }
            guard case .typeMismatch(_, let context) = error else { Issue.record("\(error)"); return }
            #expect(context.codingPath.map(\.stringValue) == ["contacts"])
        }
    }

    @Test func aMissingDocumentReadsAsNil() async throws {
        try await withDatabase { database, _ in
            let collection = try database.defaultCollection()
            #expect(try await collection.document(id: "nope", as: TodoTask.self) == nil)
        }
    }

    // MARK: - Ids

    @Test func aNilIdIsGeneratedAndAssignedAfterTheSave() async throws {
        try await withDatabase { database, _ in
            let collection = try database.defaultCollection()
            let first = TodoTask(title: "one")
            let second = TodoTask(title: "two")
            #expect(first.id == nil)
            try await collection.save(from: first)
            try await collection.save(from: second, concurrencyControl: .failOnConflict)
            let firstID = try #require(first.id)
            let secondID = try #require(second.id)
            #expect(firstID != secondID)
            #expect(try await collection.document(id: firstID, as: TodoTask.self)?.title == "one")
            #expect(try await collection.document(id: secondID)?.string(forKey: "title") == "two")
            #expect(try boundRevision(of: first)?.hasPrefix("1-") == true)
        }
    }

    @Test func aFailedSaveLeavesTheIdNil() async throws {
        final class Sensor: Codable {
            @DocumentID var id: String?
            var reading = Double.infinity
        }
        try await withDatabase { database, _ in
            let collection = try database.defaultCollection()
            let sensor = Sensor()
            let message = await expectCouchetteError(.invalidParameter) { try await collection.save(from: sensor) }
            #expect(message?.contains("reading") == true)
            #expect(sensor.id == nil)
            #expect(try await collection.count == 0)
        }
    }

    @Test func aTypeWithoutDocumentIDIsRejected() async throws {
        try await withDatabase { database, _ in
            let collection = try database.defaultCollection()
            let model = NoIDModel()
            let message = await expectCouchetteError(.invalidParameter) { try await collection.save(from: model) }
            #expect(message?.contains("NoIDModel") == true)
            await expectCouchetteError(.invalidParameter) { try await collection.save(from: model, concurrencyControl: .failOnConflict) }
            await expectCouchetteError(.invalidParameter) { try await collection.delete(for: model) }
            await expectCouchetteError(.invalidParameter) { try await collection.purge(for: model) }
            await expectCouchetteError(.invalidParameter) {
                try await database.inBatch { batch in try batch.save(from: model, in: collection) }
            }
            try await collection.save(document: MutableDocument(id: "plain").setString("x", forKey: "name"))
            await expectCouchetteError(.invalidParameter) { _ = try await collection.document(id: "plain", as: NoIDModel.self) }
            #expect(try await collection.count == 1)
        }
    }

    @Test func changingTheIdOfABoundObjectIsAnErrorNotACrash() async throws {
        try await withDatabase { database, _ in
            let collection = try database.defaultCollection()
            let task = TodoTask(title: "t")
            task.id = "original"
            try await collection.save(from: task)
            task.id = "renamed"
            let message = await expectCouchetteError(.invalidParameter) { try await collection.save(from: task) }
            #expect(message?.contains("original") == true && message?.contains("renamed") == true)
            await expectCouchetteError(.invalidParameter) { try await collection.delete(for: task) }
            await expectCouchetteError(.invalidParameter) { try await collection.purge(for: task) }
            #expect(try await collection.document(id: "renamed") == nil)
            // Setting it back makes the object usable again.
            task.id = "original"
            task.title = "t2"
            try await collection.save(from: task)
            #expect(try await collection.document(id: "original", as: TodoTask.self)?.title == "t2")
        }
    }

    // MARK: - Update, delete, purge

    @Test func readModifySave() async throws {
        try await withDatabase { database, _ in
            let collection = try database.defaultCollection()
            let task = TodoTask(title: "draft")
            task.id = "t1"
            try await collection.save(from: task)
            let read = try #require(try await collection.document(id: "t1", as: TodoTask.self))
            #expect(try boundRevision(of: read) == (try boundRevision(of: task)))
            read.title = "final"
            read.completed = true
            #expect(try await collection.save(from: read, concurrencyControl: .failOnConflict))
            let stored = try #require(try await collection.document(id: "t1"))
            #expect(stored.revisionID?.hasPrefix("2-") == true)
            #expect(stored.revisionID == (try boundRevision(of: read)))
            #expect(stored.string(forKey: "title") == "final")
            #expect(stored.bool(forKey: "completed"))
            #expect(try await collection.count == 1)
        }
    }

    @Test func deleteThenSaveBringsTheDocumentBack() async throws {
        try await withDatabase { database, _ in
            let collection = try database.defaultCollection()
            let task = TodoTask(title: "phoenix")
            try await collection.save(from: task)
            let id = try #require(task.id)
            try await collection.delete(for: task)
            #expect(try await collection.document(id: id) == nil)
            #expect(try await collection.document(id: id, as: TodoTask.self) == nil)
            #expect(task.id == id)  // the object keeps its id
            #expect(try boundRevision(of: task)?.hasPrefix("2-") == true)  // bound to the tombstone

            // Bound to the tombstone, so even failOnConflict brings it back.
            #expect(try await collection.save(from: task, concurrencyControl: .failOnConflict))
            let back = try #require(try await collection.document(id: id))
            #expect(back.string(forKey: "title") == "phoenix")
            #expect(back.revisionID?.hasPrefix("3-") == true)

            // Deleting again, then saving with last write wins, works the same way.
            try await collection.delete(for: task)
            try await collection.save(from: task)
            #expect(try await collection.document(id: id, as: TodoTask.self)?.title == "phoenix")
        }
    }

    @Test func deleteErrors() async throws {
        try await withDatabase { database, _ in
            let collection = try database.defaultCollection()
            await expectCouchetteError(.notFound) { try await collection.delete(for: TodoTask(title: "never saved")) }
            let ghost = TodoTask(title: "ghost")
            ghost.id = "ghost"
            await expectCouchetteError(.notFound) { try await collection.delete(for: ghost) }
        }
    }

    @Test func deleteWithFailOnConflictRefusesAStaleObject() async throws {
        try await withDatabase { database, _ in
            let collection = try database.defaultCollection()
            let task = TodoTask(title: "v1")
            task.id = "t"
            try await collection.save(from: task)
            let stale = try #require(try await collection.document(id: "t", as: TodoTask.self))
            task.title = "v2"
            try await collection.save(from: task)
            #expect(try await !collection.delete(for: stale, concurrencyControl: .failOnConflict))
            #expect(try await collection.document(id: "t") != nil)
            #expect(try await collection.delete(for: task, concurrencyControl: .failOnConflict))
            #expect(try await collection.document(id: "t") == nil)
        }
    }

    @Test func purgeRemovesEveryTraceAndUnbindsTheObject() async throws {
        try await withDatabase { database, _ in
            let collection = try database.defaultCollection()
            let task = TodoTask(title: "gone")
            try await collection.save(from: task)
            let id = try #require(task.id)
            try await collection.purge(for: task)
            #expect(try await collection.document(id: id) == nil)
            #expect(try await collection.count == 0)
            #expect(task.id == id)
            #expect(try boundRevision(of: task) == nil)
            await expectCouchetteError(.notFound) { try await collection.purge(for: task) }
            await expectCouchetteError(.notFound) { try await collection.purge(for: TodoTask(title: "never saved")) }
            // Saving it again starts a new history.
            try await collection.save(from: task, concurrencyControl: .failOnConflict)
            #expect(try await collection.document(id: id)?.revisionID?.hasPrefix("1-") == true)
            // An unbound object may take another id.
            try await collection.purge(for: task)
            task.id = "renamed"
            try await collection.save(from: task)
            #expect(try await collection.document(id: "renamed") != nil)
        }
    }

    // MARK: - Subclasses

    @Test func aSubclassUsingSuperEncoderRoundTrips() async throws {
        try await withDatabase { database, _ in
            let collection = try database.defaultCollection()
            let dog = Dog(name: "Rex", breed: "collie")
            try await collection.save(from: dog)
            let stored = try #require(try await collection.document(id: dog.id!))
            #expect(stored["super"]["name"].string == "Rex")
            #expect(stored.string(forKey: "breed") == "collie")
            let copy = try #require(try await collection.document(id: dog.id!, as: Dog.self))
            #expect(copy.name == "Rex" && copy.breed == "collie" && copy.id == dog.id)
            copy.breed = "kelpie"
            #expect(try await collection.save(from: copy, concurrencyControl: .failOnConflict))
        }
    }

    // MARK: - Closed databases and deleted collections

    @Test func aClosedDatabaseThrowsNotOpen() async throws {
        let directory = try TemporaryDirectory()
        let database = try directory.open()
        let collection = try database.defaultCollection()
        let task = TodoTask(title: "t")
        try await collection.save(from: task)
        try await database.close()
        await expectCouchetteError(.notOpen) { try await collection.save(from: task) }
        await expectCouchetteError(.notOpen) { _ = try await collection.document(id: task.id!, as: TodoTask.self) }
        await expectCouchetteError(.notOpen) { try await collection.delete(for: task) }
        await expectCouchetteError(.notOpen) { try await collection.purge(for: task) }
    }
}
