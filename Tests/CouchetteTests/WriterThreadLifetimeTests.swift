import Foundation
import Testing

@testable import Couchette

/// A database's writer thread lives from its first write until the database is closed: a closed
/// database that its caller still holds keeps no thread, and a call made on it after closing
/// fails at once instead of waiting for a thread that has ended.
@Suite(.tags(.concurrency)) struct WriterThreadLifetimeTests {
    @Test(.timeLimit(.minutes(3))) func closingEndsTheWriterThreadAndLaterCallsStillAnswer() async throws {
        let directory = try TemporaryDirectory()
        let database = try directory.open()
        let collection = try database.defaultCollection()
        _ = try await database.createCollection(name: "started")  // a call on the actor starts its thread
        #expect(database.writer.hasStarted)

        try await database.close()
        #expect(await eventually { !database.writer.hasStarted })

        // The actor's executor starts a thread again for this call, which fails as closed.
        await #expect(throws: CouchetteError.self) {
            _ = try await database.createCollection(name: "late")
        }
        await #expect(throws: CouchetteError.self) {
            try await collection.save(document: MutableDocument(id: "b"))
        }
        #expect(await eventually { !database.writer.hasStarted })
    }

    @Test(.timeLimit(.minutes(3))) func manyClosedDatabasesHoldNoThreads() async throws {
        let directory = try TemporaryDirectory()
        var kept: [Database] = []
        for index in 0..<20 {
            let database = try directory.open("db\(index)")
            _ = try await database.createCollection(name: "c")
            try await database.close()
            kept.append(database)
        }
        #expect(await eventually { kept.allSatisfy { !$0.writer.hasStarted } })
    }
}
