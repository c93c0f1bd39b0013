import Foundation
import Testing

@testable import Couchette

/// Heavier runs, enabled with `COUCHETTE_STRESS=1` (CI runs them, also under ThreadSanitizer).
@Suite(.tags(.concurrency), .enabled(if: ProcessInfo.processInfo.environment["COUCHETTE_STRESS"] == "1"))
struct StressTests {
    @Test func readersKeepReadingWhileTheMapGrowsUnderThem() async throws {
        try await withDatabase { database, _ in
            let collection = try database.defaultCollection()
            try await collection.save(document: MutableDocument(id: "anchor").setString("steady", forKey: "v"))
            let initial = StorageEnvironment.initialMapSize
            let chunk = String(repeating: "g", count: 1 << 20)
            let writes = 3 * initial / (1 << 20)
            try await withThrowingTaskGroup(of: Int.self) { group in
                group.addTask {
                    for index in 0..<writes {
                        try await collection.save(document: MutableDocument(id: "g\(index)").setString(chunk, forKey: "c"))
                    }
                    return 0
                }
                for _ in 0..<4 {
                    group.addTask {
                        var reads = 0
                        while try await collection.count < UInt64(writes + 1) {
                            let value = try await collection.document(id: "anchor")?.string(forKey: "v")
                            #expect(value == "steady")
                            reads += 1
                            // Reads never suspend: yield so the writer's task gets a thread too
                            // (the cooperative pool has as many threads as cores).
                            await Task.yield()
                        }
                        return reads
                    }
                }
                var totalReads = 0
                for try await reads in group { totalReads += reads }
                #expect(totalReads > 0)
            }
            #expect(database.reader.fileSize > UInt64(2 * initial))  // the file never outgrows the map
            try await database.performMaintenance(type: .integrityCheck)
        }
    }

    @Test func manyConcurrentDurableWritersAllLand() async throws {
        let directory = try TemporaryDirectory()
        var config = directory.configuration
        config.fullSync = true
        let database = try Database(name: "writers", config: config)
        let collection = try database.defaultCollection()
        let observed = Observed()
        let token = database.observation.observers.add { observed.append($0) }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for writer in 0..<16 {
                group.addTask {
                    for index in 0..<200 {
                        try await collection.save(document: MutableDocument(id: "w\(writer)-\(index)").setInt(index, forKey: "i"))
                    }
                }
            }
            try await group.waitForAll()
        }
        database.observation.observers.remove(token)
        #expect(try await collection.count == 3200)
        #expect(observed.ids.count == 3200)
        #expect(observed.all.count <= 3200)
        try await database.performMaintenance(type: .integrityCheck)
        try await database.close()
    }

    @Test func concurrentCounterWithManyTasks() async throws {
        try await withDatabase { database, _ in
            let collection = try database.defaultCollection()
            try await collection.save(document: MutableDocument(id: "counter").setInt(0, forKey: "n"))
            try await withThrowingTaskGroup(of: Void.self) { group in
                for _ in 0..<32 {
                    group.addTask {
                        for _ in 0..<250 {
                            let edit = MutableDocument(id: "counter")
                            try await collection.save(document: edit) { mine, stored in
                                mine.setInt((stored?.int(forKey: "n") ?? 0) + 1, forKey: "n")
                                return true
                            }
                        }
                    }
                }
                try await group.waitForAll()
            }
            #expect(try await collection.document(id: "counter")?.int(forKey: "n") == 8000)
        }
    }

    @Test func openAndCloseRepeatedlyWhileOthersUseTheSameFile() async throws {
        let directory = try TemporaryDirectory()
        let keeper = try directory.open("shared")
        try await keeper.defaultCollection().save(document: MutableDocument(id: "k"))
        try await withThrowingTaskGroup(of: Void.self) { group in
            for worker in 0..<4 {
                group.addTask {
                    for round in 0..<50 {
                        let database = try directory.open("shared")
                        let collection = try database.defaultCollection()
                        try await collection.save(document: MutableDocument(id: "w\(worker)-\(round)"))
                        #expect(try await collection.document(id: "k") != nil)
                        try await database.close()
                    }
                }
            }
            try await group.waitForAll()
        }
        #expect(try await keeper.defaultCollection().count == 201)
        try await keeper.close()
    }
}
