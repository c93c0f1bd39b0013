import Foundation
import Testing

@testable import Couchette

/// Several processes may open one database at once; LMDB serializes their writers.
@Suite struct MultiProcessTests {
    private func writer(_ directory: TemporaryDirectory, prefix: String, limit: Int?) async throws -> Process {
        let child = Process()
        child.executableURL = URL(fileURLWithPath: CrashTests.toolPath)
        child.arguments = ["write-loop", directory.path, "shared", "--prefix", prefix] + (limit.map { ["--limit", "\($0)"] } ?? [])
        child.standardOutput = FileHandle.nullDevice
        try await startProcess(child)
        return child
    }

    @Test func twoProcessesAndThisOneWriteTheSameDatabase() async throws {
        try #require(FileManager.default.isExecutableFile(atPath: CrashTests.toolPath))
        let directory = try TemporaryDirectory()
        let database = try directory.open("shared")
        let collection = try database.defaultCollection()
        let children = [try await writer(directory, prefix: "a", limit: 300), try await writer(directory, prefix: "b", limit: 300)]
        for index in 0..<300 { try await collection.save(document: MutableDocument(id: "main-\(index)")) }
        for child in children {
            await waitForExit(child)
            #expect(child.terminationStatus == 0)
        }
        #expect(try await collection.count == 900)
        #expect(try await collection.document(id: "a-299")?.int(forKey: "n") == 299)
        // Sequences stay unique across processes.
        let next = MutableDocument(id: "last")
        try await collection.save(document: next)
        #expect(next.sequence == 901)
        try await database.performMaintenance(type: .integrityCheck)
        try await database.close()
    }

    @Test func compactionIsRefusedWhileAnotherProcessHasTheDatabaseOpen() async throws {
        try #require(FileManager.default.isExecutableFile(atPath: CrashTests.toolPath))
        let directory = try TemporaryDirectory()
        let database = try directory.open("shared")
        let child = try await writer(directory, prefix: "busy", limit: nil)
        defer {
            kill(child.processIdentifier, SIGKILL)
            child.waitUntilExit()  // only on a failed expectation; cannot await in defer
        }
        let collection = try database.defaultCollection()
        let opened = try await eventually { try await collection.document(id: "busy-0") != nil }
        try #require(opened)
        await expectCouchetteError(.busy) { try await database.performMaintenance(type: .compact) }
        kill(child.processIdentifier, SIGKILL)
        await waitForExit(child)
        try await database.performMaintenance(type: .compact)
        try await database.performMaintenance(type: .integrityCheck)
        try await database.close()
    }
}
