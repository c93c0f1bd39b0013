import Foundation
import Testing

@testable import Couchette

/// Change feeds and live queries fire for commits made by another process on the same file.
@Suite(.tags(.concurrency)) struct CrossProcessChangesTests {
    private func ids(_ change: QueryChange?) -> [String]? {
        change?.results?.map { $0.string(forKey: "id") ?? "?" }
    }

    @Test func anotherProcessesSavesReachCollectionChanges() async throws {
        try #require(FileManager.default.isExecutableFile(atPath: CrashTests.toolPath))
        try await withDatabase("shared") { database, directory in
            let collection = try database.defaultCollection()
            let changes = collection.changes()
            try await collection.save(document: MutableDocument(id: "mine-1"))
            #expect(try await runTool(["write-loop", directory.path, "shared", "--prefix", "other", "--limit", "5"]) == 0)
            try await collection.save(document: MutableDocument(id: "mine-2"))

            // Other-process commits may be merged into one event; own commits come once each.
            var seen: [String] = []
            while Set(seen).count < 7, let change = await changes.next() {
                seen += change.documentIDs
            }
            #expect(seen.count == 7)
            #expect(Set(seen) == Set(["mine-1", "mine-2"] + (0..<5).map { "other-\($0)" }))
            let others = seen.filter { $0.hasPrefix("other-") }
            #expect(others == (0..<5).map { "other-\($0)" }, "in commit order")
            // Nothing reported twice: no event is pending once the monitor has caught up.
            #expect(await eventually { database.observation.external.hasCaughtUp() })
            try await collection.save(document: MutableDocument(id: "mine-3"))
            #expect(await changes.next()?.documentIDs == ["mine-3"])
        }
    }

    @Test func anotherProcessesWritesReachDocumentChangesAndLiveQueries() async throws {
        try #require(FileManager.default.isExecutableFile(atPath: CrashTests.toolPath))
        try await withDatabase("shared") { database, directory in
            let collection = try database.defaultCollection()
            try await collection.save(document: MutableDocument(id: "a").setBoolean(false, forKey: "done"))
            let documentChanges = collection.documentChanges(for: "b")
            let live = try database.createQuery("SELECT meta().id AS id FROM _default WHERE done = false ORDER BY meta().id").changes()
            #expect(ids(await live.next()) == ["a"])

            let db = directory.path + "/shared"
            #expect(try await runTool(["put", db, "b", #"{"done": false}"#]) == 0)
            #expect(await documentChanges.next()?.documentID == "b")
            #expect(ids(await live.next()) == ["a", "b"])
            #expect(try await runTool(["put", db, "c", #"{"done": true}"#]) == 0)
            #expect(try await runTool(["rm", db, "a"]) == 0)
            #expect(ids(await live.next()) == ["b"])
            // A purge leaves no sequence entry: the live count tells the live query to re-run.
            #expect(try await runTool(["purge", db, "b"]) == 0)
            #expect(ids(await live.next()) == [])
        }
    }

    @Test func aPurgeCommittedWithASaveReachesLiveQueries() async throws {
        try #require(FileManager.default.isExecutableFile(atPath: CrashTests.toolPath))
        try await withDatabase("shared") { database, directory in
            let collection = try database.defaultCollection()
            for id in ["a", "b"] { try await collection.save(document: MutableDocument(id: id).setBoolean(false, forKey: "done")) }
            let changes = collection.changes()
            let observed = Observed()
            let token = database.observation.observers.add { observed.append($0) }
            defer { database.observation.observers.remove(token) }
            // LIMIT: the live query keeps no documents; whether a commit can matter is decided
            // from the ids it changed, which must not then be taken for all it changed.
            let live = try database.createQuery("SELECT meta().id AS id FROM _default WHERE done = false ORDER BY meta().id LIMIT 10")
                .changes()
            #expect(ids(await live.next()) == ["a", "b"])

            // One commit of another process: a document that does not match, and the purge of one
            // that did.
            let db = directory.path + "/shared"
            #expect(try await runTool(["batch", db, "--put", #"c={"done": true}"#, "--purge", "a"]) == 0)
            #expect(ids(await live.next()) == ["b"])
            #expect(await changes.next()?.documentIDs == ["c"], "the feed reports the saved id; a purge has none")

            // This process's own purge beside a save is named by its commit, never reported again
            // by the monitor as someone else's.
            try await database.inBatch { batch in
                try batch.save(document: MutableDocument(id: "d").setBoolean(true, forKey: "done"), in: collection)
                try batch.purge(id: "b", in: collection)
            }
            #expect(ids(await live.next()) == [])
            #expect(Set(await changes.next()?.documentIDs ?? []) == ["d", "b"])
            #expect(await eventually { database.observation.external.hasCaughtUp() })
            try await collection.save(document: MutableDocument(id: "e"))
            #expect(await changes.next()?.documentIDs == ["e"])
            let unnamed = observed.all.filter { $0.hasUnnamedChanges(collection.spec) }
            #expect(unnamed.map { $0.documentIDs[collection.spec] } == [["c"]], "only the other process's purge is unnamed")
        }
    }

    @Test func compactionRestartingTransactionIDsLosesAndRepeatsNothing() async throws {
        try #require(FileManager.default.isExecutableFile(atPath: CrashTests.toolPath))
        try await withDatabase("shared") { database, directory in
            let collection = try database.defaultCollection()
            let changes = collection.changes()
            for id in ["a", "b", "c"] { try await collection.save(document: MutableDocument(id: id)) }
            try await database.performMaintenance(type: .compact)
            try await collection.save(document: MutableDocument(id: "d"))
            #expect(try await runTool(["put", directory.path + "/shared", "other", "{}"]) == 0)
            try await collection.save(document: MutableDocument(id: "e"))
            var seen: [String] = []
            while seen.count < 6, let change = await changes.next() { seen += change.documentIDs }
            #expect(Set(seen) == ["a", "b", "c", "d", "e", "other"])
            #expect(await eventually { database.observation.external.hasCaughtUp() })
            try await collection.save(document: MutableDocument(id: "f"))
            #expect(await changes.next()?.documentIDs == ["f"], "nothing reported twice")
        }
    }

    /// Whether an inotify descriptor of this process watches the folder at `path`: the monitor's
    /// file watch, which it holds exactly while it runs (read from /proc, as any tool would).
    private func isWatched(_ path: String) throws -> Bool {
        var status = stat()
        guard stat(path, &status) == 0 else { throw CouchetteError(.io, "cannot stat \(path)") }
        let inode = "ino:" + String(status.st_ino, radix: 16)
        let descriptors = try FileManager.default.contentsOfDirectory(atPath: "/proc/self/fdinfo")
        return descriptors.contains { descriptor in
            let info = (try? String(contentsOfFile: "/proc/self/fdinfo/" + descriptor, encoding: .utf8)) ?? ""
            return info.split(separator: "\n").contains { $0.hasPrefix("inotify ") && $0.split(separator: " ").contains(Substring(inode)) }
        }
    }

    @Test func theMonitorStopsWithTheLastObserver() async throws {
        try await withDatabase { database, _ in
            let collection = try database.defaultCollection()
            let folder = database.path
            #expect(try !isWatched(folder))
            do {
                let changes = collection.changes()
                try await collection.save(document: MutableDocument(id: "x"))
                #expect(await changes.next()?.documentIDs == ["x"])
                #expect(try isWatched(folder), "the monitor runs while an observer exists")
            }
            #expect(await eventually { (try? isWatched(folder)) == false }, "the monitor ended with the last observer")
        }
    }
}
