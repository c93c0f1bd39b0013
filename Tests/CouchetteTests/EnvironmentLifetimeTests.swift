import Foundation
import Testing

@testable import Couchette

/// Nothing keeps a database's LMDB environment (its memory map and file descriptors) alive once
/// the database is closed, or dropped without closing: no reference cycle through the expiration
/// sweeper, the cross-process change monitor, change feeds or live queries. The monitor holds the
/// database until its next wake-up, at most its one-second safety interval.
@Suite struct EnvironmentLifetimeTests {
    private func released(closing: Bool, _ use: (Database) async throws -> Void) async throws -> Bool {
        let directory = try TemporaryDirectory()
        weak var environment: StorageEnvironment?
        do {
            let database = try directory.open()
            environment = database.core.environment
            try await use(database)
            if closing { try await database.close() }
        }
        return await eventually(timeout: .seconds(5)) { environment == nil }
    }

    @Test(arguments: [true, false])
    func writesAndQueriesLeaveNothingBehind(closing: Bool) async throws {
        #expect(
            try await released(closing: closing) { database in
                let collection = try database.defaultCollection()
                try await collection.save(document: MutableDocument(id: "a").setInt(1, forKey: "n"))
                try await collection.setDocumentExpiration(id: "a", expiration: Date().addingTimeInterval(3600))
                _ = try await database.createQuery("SELECT n FROM _ WHERE n = 1").execute()
            })
    }

    @Test(arguments: [true, false])
    func changeFeedsAndLiveQueriesLeaveNothingBehind(closing: Bool) async throws {
        #expect(
            try await released(closing: closing) { database in
                let feed = try database.defaultCollection().changes()
                let stream = try database.createQuery("SELECT * FROM _").changes()
                for try await _ in stream { break }
                _ = feed
            })
    }
}
