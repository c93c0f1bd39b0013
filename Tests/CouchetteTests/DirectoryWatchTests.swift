#if canImport(Glibc)
import Foundation
import Testing
@testable import Couchette

/// The inotify watch that wakes the cross-process change monitor: commits of another process,
/// and compaction replacing `data.mdb`, must wake it; nothing else happening must not.
@Suite struct DirectoryWatchTests {
    @Test func anotherProcessesCommitWakesTheWatch() async throws {
        try #require(FileManager.default.isExecutableFile(atPath: CrashTests.toolPath))
        try await withDatabase("shared") { database, directory in
            let collection = try database.defaultCollection()
            try await collection.save(document: MutableDocument(id: "before"))
            let watch = try DirectoryWatch(path: database.core.environment.path)
            _ = try await collection.document(id: "before")  // reads write nothing
            #expect(!watch.wait(milliseconds: 0))
            #expect(try await runTool(["put", directory.path + "/shared", "other", "{}"]) == 0)
            #expect(watch.wait(milliseconds: 0), "the child has exited: its commit's event is queued")
            #expect(!watch.wait(milliseconds: 0), "one wait consumes every pending event")
        }
    }

    @Test func compactionAndLaterCommitsWakeTheWatch() async throws {
        try await withDatabase { database, _ in
            let collection = try database.defaultCollection()
            for index in 0..<50 { try await collection.save(document: MutableDocument(id: "d\(index)")) }
            let watch = try DirectoryWatch(path: database.core.environment.path)
            try await database.performMaintenance(type: .compact)
            #expect(watch.wait(milliseconds: 0))
            // The folder, not the replaced file, is watched: commits to the new file still wake it.
            try await collection.save(document: MutableDocument(id: "after"))
            #expect(watch.wait(milliseconds: 0))
        }
    }

    @Test func aMissingFolderIsAnIOError() async throws {
        let directory = try TemporaryDirectory()
        await expectCouchetteError(.io) { _ = try DirectoryWatch(path: directory.path + "/missing") }
    }
}
#endif
