import Foundation
import Testing

@testable import Couchette

/// A `Collection` object that outlived its collection — deleted, and perhaps re-created under the
/// same name, by another `Database` instance or another process — must never report a write as
/// saved that went nowhere, nor read the new collection's documents.
@Suite(.tags(.concurrency)) struct StaleCollectionTests {
    @Test func aStaleObjectOfAnotherInstanceCannotSaveIntoTheDeadCollection() async throws {
        let directory = try TemporaryDirectory()
        let first = try directory.open("shared")
        let second = try directory.open("shared")
        let stale = try await first.createCollection(name: "items")
        try await stale.save(document: MutableDocument(id: "before").setInt(1, forKey: "n"))

        try await second.deleteCollection(name: "items")
        let current = try await second.createCollection(name: "items")
        try await current.save(document: MutableDocument(id: "theirs").setInt(2, forKey: "n"))

        let message = await expectCouchetteError(.notOpen) {
            try await stale.save(document: MutableDocument(id: "lost").setInt(3, forKey: "n"))
        }
        #expect(message?.contains("_default.items") == true)
        // Having noticed, the instance refuses reads through the stale object too: it never
        // answers with the new collection's documents.
        await expectCouchetteError(.notOpen) { _ = try await stale.document(id: "theirs") }
        await expectCouchetteError(.notOpen) { _ = try await stale.count }
        // A batch that touches the stale collection writes nothing at all.
        let defaults = try first.defaultCollection()
        await expectCouchetteError(.notOpen) {
            try await first.inBatch { batch in
                try batch.save(document: MutableDocument(id: "also-lost"), in: defaults)
                try batch.save(document: MutableDocument(id: "lost-in-batch"), in: stale)
            }
        }
        #expect(try await defaults.document(id: "also-lost") == nil)
        await expectCouchetteError(.notOpen) {
            try await stale.createIndex(withName: "byN", config: ValueIndexConfiguration(["n"]))
        }

        // Looking the collection up again gives the live one, which both instances share.
        let fresh = try #require(try first.collection(name: "items"))
        #expect(try await fresh.document(id: "theirs")?.int(forKey: "n") == 2)
        try await fresh.save(document: MutableDocument(id: "mine").setInt(4, forKey: "n"))
        #expect(try await current.document(id: "mine")?.int(forKey: "n") == 4)
        #expect(try await current.count == 2)
        try await first.close()
        try await second.close()

        let reopened = try directory.open("shared")
        let items = try #require(try reopened.collection(name: "items"))
        #expect(try await items.count == 2)
        #expect(try await items.document(id: "lost") == nil)
        try await reopened.performMaintenance(type: .integrityCheck)
        try await reopened.close()
    }

    @Test func aStaleInstanceDeletesTheCollectionNowNamedSoWithoutOrphaningIt() async throws {
        let directory = try TemporaryDirectory()
        let first = try directory.open("shared")
        let second = try directory.open("shared")
        _ = try await first.createCollection(name: "items")
        try await second.deleteCollection(name: "items")
        let current = try await second.createCollection(name: "items")
        try await current.save(document: MutableDocument(id: "theirs"))
        // `first` still caches the dead number; deleting by name deletes the live collection and
        // its documents, never just the name (which would leave its documents unreachable).
        try await first.deleteCollection(name: "items")
        #expect(try second.collection(name: "items") == nil)
        await expectCouchetteError(.notOpen) { try await current.save(document: MutableDocument(id: "more")) }
        try await second.performMaintenance(type: .integrityCheck)
        let leftovers = try first.core.read { txn in
            var count = 0
            try txn.scan(first.core.environment.tables.documents, from: [], to: nil) { _, _ in
                count += 1
                return true
            }
            return count
        }
        #expect(leftovers == 0)
        try await first.close()
        try await second.close()
    }

    @Test func aWriterInAnotherProcessIsToldItsCollectionWasReplaced() async throws {
        try #require(FileManager.default.isExecutableFile(atPath: CrashTests.toolPath))
        let directory = try TemporaryDirectory()
        let database = try directory.open("shared")
        _ = try await database.createCollection(name: "items")
        let log = directory.path + "/writer.log"
        _ = FileManager.default.createFile(atPath: log, contents: nil)
        let output = try FileHandle(forWritingTo: URL(fileURLWithPath: log))
        let child = Process()
        child.executableURL = URL(fileURLWithPath: CrashTests.toolPath)
        child.arguments = [
            "write-loop", directory.path, "shared", "--collection", "items", "--prefix", "child",
            "--limit", "1000000",
        ]
        child.standardOutput = output
        child.standardError = output
        try await startProcess(child)
        defer { if child.isRunning { kill(child.processIdentifier, SIGKILL) } }
        let writing = try await eventually(timeout: .seconds(30)) {
            try String(contentsOfFile: log, encoding: .utf8).contains("saved child-")
        }
        try #require(writing)

        try await database.deleteCollection(name: "items")
        let items = try await database.createCollection(name: "items")
        try await items.save(document: MutableDocument(id: "mine"))

        // The child's object names the deleted collection: its next save must fail, not
        // report success for a document no one can read.
        let stopped = await eventually(timeout: .seconds(30)) { !child.isRunning }
        try #require(stopped, "the child kept saving into the deleted collection")
        try output.close()
        #expect(child.terminationStatus != 0)
        let text = try String(contentsOfFile: log, encoding: .utf8)
        #expect(text.contains("_default.items has been deleted"), "\(text.suffix(300))")
        #expect(try await items.count == 1)
        try await database.close()

        let reopened = try directory.open("shared")
        #expect(try await reopened.collection(name: "items")?.count == 1)
        try await reopened.performMaintenance(type: .integrityCheck)
        try await reopened.close()
    }
}
