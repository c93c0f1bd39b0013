import Foundation
import Testing

@testable import Couchette

/// Indexes follow replicated writes: pulled revisions, deletions and conflict resolutions go
/// through the same current-record function as local saves, in the same transaction.
@Suite struct IndexReplicationTests {
    private func origins(_ database: Database, _ query: String) async throws -> [Int] {
        try await database.createQuery(query).execute().map { $0.int(forKey: "n") }
    }

    @Test func pulledDocumentsAreIndexedAndFoundThroughTheIndex() async throws {
        try await withTwoDatabases { local, remote in
            let collection = try local.defaultCollection()
            try await collection.createIndex(withName: "byN", config: ValueIndexConfiguration(["n"]))
            let query = "SELECT n FROM _ WHERE n >= 3 ORDER BY n"
            #expect(try await local.createQuery(query).explain().contains("byN"))

            let remoteCollection = try remote.defaultCollection()
            try await saveDocuments(6, prefix: "r", in: remoteCollection)
            _ = await runToCompletion(try Replicator(config: makeConfig(local, remote, .pull)))
            #expect(try await origins(local, query) == [3, 4, 5])

            // An update and a deletion on the remote side move and remove index entries here.
            let five = try #require(try await remoteCollection.document(id: "r5"))
            try await remoteCollection.save(document: five.toMutable().setInt(1, forKey: "n"))
            try await remoteCollection.delete(document: try #require(try await remoteCollection.document(id: "r4")))
            _ = await runToCompletion(try Replicator(config: makeConfig(local, remote, .pull)))
            #expect(try await origins(local, query) == [3])
            #expect(try await origins(local, "SELECT n FROM _ WHERE n < 3 ORDER BY n") == [0, 1, 1, 2])
        }
    }

    @Test func aResolvedConflictLeavesTheWinnersEntriesOnly() async throws {
        try await withTwoDatabases { local, remote in
            let collection = try local.defaultCollection()
            try await collection.createIndex(withName: "byN", config: ValueIndexConfiguration(["n"]))
            try await collection.save(document: MutableDocument(id: "doc").setInt(1, forKey: "n"))
            _ = await runToCompletion(try Replicator(config: makeConfig(local, remote, .push)))
            // Both sides edit: the pull creates a conflict that the default resolver settles.
            try await collection.save(document: try #require(try await collection.document(id: "doc")).toMutable().setInt(10, forKey: "n"))
            let remoteCollection = try remote.defaultCollection()
            var theirs = try #require(try await remoteCollection.document(id: "doc")).toMutable()
            theirs.setInt(20, forKey: "n")
            try await remoteCollection.save(document: theirs)
            theirs = try #require(try await remoteCollection.document(id: "doc")).toMutable().setInt(30, forKey: "n")
            try await remoteCollection.save(document: theirs)  // a higher generation: the remote branch wins
            _ = await runToCompletion(try Replicator(config: makeConfig(local, remote, .pull)))
            let winner = try #require(try await collection.document(id: "doc"))
            #expect(winner.int(forKey: "n") == 30)
            #expect(try await origins(local, "SELECT n FROM _ WHERE n >= 0 ORDER BY n") == [30])
        }
    }

    @Test func pulledDocumentsReachTheFullTextIndex() async throws {
        try await withTwoDatabases { local, remote in
            let collection = try local.defaultCollection()
            try await collection.createIndex(withName: "text", config: FullTextIndexConfiguration(["text"], language: "en"))
            let query = try local.createQuery("SELECT meta().id AS id FROM _ WHERE MATCH(text, 'jumping') ORDER BY meta().id")
            let remoteCollection = try remote.defaultCollection()
            try await remoteCollection.save(document: MutableDocument(id: "a").setString("The fox jumps", forKey: "text"))
            try await remoteCollection.save(document: MutableDocument(id: "b").setString("A dog sleeps", forKey: "text"))
            try await remoteCollection.save(document: MutableDocument(id: "c").setString("Jumped over", forKey: "text"))
            _ = await runToCompletion(try Replicator(config: makeConfig(local, remote, .pull)))
            #expect(try await query.execute().map { $0.string(forKey: "id") } == ["a", "c"])

            try await remoteCollection.delete(document: try #require(try await remoteCollection.document(id: "a")))
            try await remoteCollection.save(document: MutableDocument(id: "b").setString("A dog jumps", forKey: "text"))
            _ = await runToCompletion(try Replicator(config: makeConfig(local, remote, .pull)))
            #expect(try await query.execute().map { $0.string(forKey: "id") } == ["b", "c"])
        }
    }
}
