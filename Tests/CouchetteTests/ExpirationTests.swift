import Foundation
import Testing

@testable import Couchette

@Suite(.tags(.concurrency)) struct ExpirationTests {
    @Test func expiredDocumentsAreHiddenAtOnceAndPurgedInTheBackground() async throws {
        let clock = TestClock()
        let directory = try TemporaryDirectory()
        let database = try directory.open(clock: clock)
        let collection = try database.defaultCollection()
        try await collection.save(document: MutableDocument(id: "soon").setInt(1, forKey: "n"))
        try await collection.save(document: MutableDocument(id: "later").setInt(2, forKey: "n"))
        let observed = Observed()
        let token = database.observation.observers.add { summary in observed.append(summary) }
        defer { database.observation.observers.remove(token) }

        try await collection.setDocumentExpiration(id: "soon", expiration: clock.date.addingTimeInterval(3600))
        try await collection.setDocumentExpiration(id: "later", expiration: clock.date.addingTimeInterval(3600))
        #expect(try await collection.getDocumentExpiration(id: "soon") == clock.date.addingTimeInterval(3600))
        #expect(try await collection.document(id: "soon") != nil)
        try await collection.setDocumentExpiration(id: "soon", expiration: clock.date)
        #expect(try await collection.document(id: "soon") == nil)  // hidden at once, purged or not
        #expect(try await eventually { try await collection.count == 1 })
        // Readers may see the purge's commit a moment before the writer thread calls the observers.
        #expect(await eventually { observed.ids.contains("soon") })
        #expect(try await collection.document(id: "later") != nil)
        await expectCouchetteError(.notFound) { _ = try await collection.getDocumentExpiration(id: "soon") }
        try await database.close()
    }

    @Test func aDocumentExpiresAtItsMillisecondAndTheSweeperWakesThen() async throws {
        let clock = TestClock()
        let directory = try TemporaryDirectory()
        let database = try directory.open(clock: clock)
        let collection = try database.defaultCollection()
        try await collection.save(document: MutableDocument(id: "a"))
        try await collection.save(document: MutableDocument(id: "b"))
        try await collection.setDocumentExpiration(id: "a", expiration: clock.date.addingTimeInterval(10))
        clock.advance(byMilliseconds: 9_999)
        #expect(try await collection.document(id: "a") != nil, "visible until its expiration")
        #expect(try await collection.count == 2)
        clock.advance(byMilliseconds: 1)
        #expect(try await collection.document(id: "a") == nil, "hidden from its expiration on")
        // The sweeper sleeps on the clock until the expiration: moving the clock wakes it.
        #expect(try await eventually { try await collection.count == 1 })
        #expect(try await collection.document(id: "b") != nil)
        try await database.close()
    }

    @Test func expirationSurvivesReopenAndIsPurgedThen() async throws {
        let clock = TestClock()
        let directory = try TemporaryDirectory()
        var database = try directory.open(clock: clock)
        var collection = try database.defaultCollection()
        try await collection.save(document: MutableDocument(id: "a"))
        try await collection.setDocumentExpiration(id: "a", expiration: clock.date.addingTimeInterval(0.3))
        try await database.close()
        clock.advance(byMilliseconds: 400)
        database = try directory.open(clock: clock)
        collection = try database.defaultCollection()
        #expect(try await collection.document(id: "a") == nil)
        #expect(try await eventually { try await collection.count == 0 })
        try await database.close()
    }

    @Test func clearingAnExpirationKeepsTheDocument() async throws {
        try await withDatabase { database, _ in
            let collection = try database.defaultCollection()
            try await collection.save(document: MutableDocument(id: "a"))
            try await collection.setDocumentExpiration(id: "a", expiration: Date().addingTimeInterval(3600))
            try await collection.setDocumentExpiration(id: "a", expiration: nil)
            #expect(try await collection.getDocumentExpiration(id: "a") == nil)
            let pending = try database.reader.read { try $0.nextExpiration() }
            #expect(pending == nil)
            #expect(try await collection.document(id: "a") != nil)
            await expectCouchetteError(.notFound) {
                try await collection.setDocumentExpiration(id: "missing", expiration: Date())
            }
        }
    }
}

/// Thread-safe collector of commit summaries.
final class Observed: @unchecked Sendable {
    // @unchecked: every access to `summaries` goes through `lock`.
    private let lock = NSLock()
    private var summaries: [CommitSummary] = []

    func append(_ summary: CommitSummary) { lock.withLock { summaries.append(summary) } }
    var all: [CommitSummary] { lock.withLock { summaries } }
    var ids: [String] { all.flatMap { $0.documentIDs.values.flatMap { $0 } } }
}
