import Foundation
import Testing

@testable import Couchette

/// A read leaves its LMDB snapshot open for the next one (no renewal while nothing commits), and
/// that never shows stale data: every read sees each commit that finished before it began — this
/// process's saves, batches, deletes and purges, another instance's, another process's — and a
/// kept snapshot is let go at the next commit of this process and soon after the last read.
@Suite(.tags(.concurrency)) struct KeptReadSnapshotTests {
    @Test func consecutiveReadsShareOneSnapshotUntilACommit() async throws {
        try await withDatabase { database, _ in
            let collection = try database.defaultCollection()
            let environment = database.core.environment
            await keepSnapshotsLong(environment)
            try await collection.save(document: MutableDocument(id: "a").setInt(1, forKey: "n"))
            #expect(environment.keptSnapshotID == nil, "a commit keeps no snapshot")
            _ = try await collection.document(id: "a")
            let kept = try #require(environment.keptSnapshotID)
            #expect(kept == environment.lastTransactionID)
            _ = try await collection.document(id: "a")
            #expect(environment.keptSnapshotID == kept)
            try await collection.save(document: MutableDocument(id: "b"))
            #expect(environment.keptSnapshotID == nil, "the commit lets the older snapshot go")
        }
    }

    @Test func aReadAfterACommitOfThisProcessSeesIt() async throws {
        try await withDatabase { database, directory in
            let collection = try database.defaultCollection()
            try await collection.save(document: MutableDocument(id: "a").setInt(0, forKey: "n"))
            var expected = 0
            for round in 1...20 {
                // Read first, so that a snapshot is kept across the write below.
                let read = try #require(try await collection.document(id: "a"))
                #expect(read.int(forKey: "n") == expected)
                switch round % 4 {
                case 0:
                    try await collection.save(document: read.toMutable().setInt(round, forKey: "n"))
                case 1:
                    try await database.inBatch { batch in
                        try batch.save(document: read.toMutable().setInt(round, forKey: "n"), in: collection)
                    }
                case 2:
                    try await database.inBatch { batch in _ = try batch.save(id: "a", json: #"{"n":\#(round)}"#, in: collection) }
                default:
                    // Another instance on the same file shares the environment.
                    let other = try directory.open()
                    try await other.defaultCollection().save(document: MutableDocument(id: "a").setInt(round, forKey: "n"))
                    try await other.close()
                }
                expected = round
                #expect(try await collection.document(id: "a")?.int(forKey: "n") == expected, "round \(round)")
            }
            _ = try await collection.document(id: "a")
            try await collection.delete(document: try #require(try await collection.document(id: "a")))
            #expect(try await collection.document(id: "a") == nil)
            try await collection.save(document: MutableDocument(id: "p"))
            #expect(try await collection.document(id: "p") != nil)
            try await collection.purge(id: "p")
            #expect(try await collection.document(id: "p") == nil)
            #expect(try await collection.count == 0)
        }
    }

    @Test func aReadAfterAnotherProcessesCommitSeesIt() async throws {
        try #require(FileManager.default.isExecutableFile(atPath: CrashTests.toolPath))
        try await withDatabase("shared") { database, directory in
            let collection = try database.defaultCollection()
            let environment = database.core.environment
            await keepSnapshotsLong(environment)
            try await collection.save(document: MutableDocument(id: "mine"))
            let path = directory.path + "/shared"
            // Three rounds in which the snapshot stayed kept across the other process's commit (a
            // round where something let it go proves nothing, and is tried again).
            var proven = 0
            for round in 0..<10 where proven < 3 {
                #expect(try await collection.document(id: "other-\(round)") == nil)
                let kept = try #require(environment.keptSnapshotID, "a read keeps its snapshot")
                #expect(try await runTool(["put", path, "other-\(round)", #"{"round": \#(round)}"#]) == 0)
                #expect(environment.lastTransactionID > kept)
                let stillKept = environment.keptSnapshotID == kept
                #expect(try await collection.document(id: "other-\(round)")?.int(forKey: "round") == round)
                #expect(environment.keptSnapshotID == environment.lastTransactionID)
                if stillKept { proven += 1 }
            }
            #expect(proven == 3, "the snapshot stayed kept behind another process's commit")
        }
    }

    @Test func aKeptSnapshotIsLetGoSoonAfterTheLastRead() async throws {
        try await withDatabase { database, _ in
            let collection = try database.defaultCollection()
            try await collection.save(document: MutableDocument(id: "a"))
            _ = try await collection.document(id: "a")
            #expect(database.core.environment.keptSnapshotID != nil)
            // Nothing else reads or writes: the scheduled retirement resets it.
            #expect(await eventually { database.core.environment.keptSnapshotID == nil })
        }
    }

    @Test func concurrentReadersEachSeeEveryFinishedCommit() async throws {
        try await withDatabase { database, _ in
            let collection = try database.defaultCollection()
            try await collection.save(document: MutableDocument(id: "counter").setInt(0, forKey: "n"))
            try await withThrowingTaskGroup(of: Void.self) { group in
                for _ in 0..<2 {
                    group.addTask {
                        var last = 0
                        while last < 200 {
                            let seen = try await collection.document(id: "counter")?.int(forKey: "n") ?? -1
                            #expect(seen >= last, "a read never goes back to an older snapshot")
                            last = seen
                            await Task.yield()  // reads never suspend: the saves need the pool's threads too
                            try Task.checkCancellation()
                        }
                    }
                }
                for value in 1...200 {
                    try await collection.save(document: MutableDocument(id: "counter").setInt(value, forKey: "n"))
                    // Once the save returned, every read that starts sees it.
                    #expect(try await collection.document(id: "counter")?.int(forKey: "n") == value)
                }
                try await group.waitForAll()
            }
        }
    }

    /// Lengthens the kept snapshot's lifetime for a test that looks at it, after waiting out a
    /// retirement scheduled with the default 5 ms by the reads of opening the database: under
    /// load it could fire late and let go a snapshot the test has just seen kept.
    private func keepSnapshotsLong(_ environment: StorageEnvironment) async {
        environment.warmReaderLifetime.store(60_000, ordering: .relaxed)
        #expect(await eventually { !environment.warmRetirementIsScheduled })
    }
}
