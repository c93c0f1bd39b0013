import Foundation
import Testing

@testable import Couchette

@Suite(.tags(.concurrency)) struct ExpirationTests {
    @Test func expiredDocumentsAreHiddenAtOnceAndPurgedInTheBackground() async throws {
        try await withDatabase { database, _ in
            let collection = try database.defaultCollection()
            try await collection.save(document: MutableDocument(id: "soon").setInt(1, forKey: "n"))
            try await collection.save(document: MutableDocument(id: "later").setInt(2, forKey: "n"))
            let observed = Observed()
            let token = database.observation.observers.add { summary in observed.append(summary) }
            defer { database.observation.observers.remove(token) }

            try await collection.setDocumentExpiration(id: "soon", expiration: Date().addingTimeInterval(3600))
            try await collection.setDocumentExpiration(id: "later", expiration: Date().addingTimeInterval(3600))
            #expect(try await collection.getDocumentExpiration(id: "soon") != nil)
            #expect(try await collection.document(id: "soon") != nil)
            try await collection.setDocumentExpiration(id: "soon", expiration: Date())
            #expect(try await collection.document(id: "soon") == nil)  // hidden at once, purged or not
            #expect(try await eventually { try await collection.count == 1 })
            // Readers may see the purge's commit a moment before the writer thread calls the observers.
            #expect(await eventually { observed.ids.contains("soon") })
            #expect(try await collection.document(id: "later") != nil)
            await expectCouchetteError(.notFound) { _ = try await collection.getDocumentExpiration(id: "soon") }
        }
    }

    @Test func expirationSurvivesReopenAndIsPurgedThen() async throws {
        let directory = try TemporaryDirectory()
        var database = try directory.open()
        var collection = try database.defaultCollection()
        try await collection.save(document: MutableDocument(id: "a"))
        try await collection.setDocumentExpiration(id: "a", expiration: Date().addingTimeInterval(0.3))
        try await database.close()
        try await Task.sleep(for: .milliseconds(400))
        database = try directory.open()
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
