import Foundation
import Testing

@testable import Couchette

/// `couchette watch`: a live query in the terminal, fed by other processes' commits.
@Suite struct WatchCommandTests {
    @Test func watchReprintsTheResultsWhenAnotherProcessChangesThemUntilInterrupted() async throws {
        try #require(FileManager.default.isExecutableFile(atPath: CrashTests.toolPath))
        try await withDatabase("shared") { database, directory in
            let collection = try database.defaultCollection()
            try await collection.save(document: MutableDocument(id: "a").setBoolean(false, forKey: "done"))

            let outputPath = directory.path + "/watch.out"
            let child = try await Self.startWatch(
                [
                    directory.path + "/shared",
                    "SELECT meta().id AS id FROM _default WHERE done = false ORDER BY meta().id",
                    "--collection", "_default",
                ], outputPath: outputPath)
            defer { if child.isRunning { kill(child.processIdentifier, SIGKILL) } }
            let output = { (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? "" }

            #expect(await eventually { output().contains("1 row") })
            // The watcher is another process: these commits reach it through the file.
            try await collection.save(document: MutableDocument(id: "b").setBoolean(false, forKey: "done"))
            #expect(await eventually { output().contains("2 rows") })
            try await collection.save(document: MutableDocument(id: "c").setBoolean(true, forKey: "done"))
            #expect(await eventually { output().contains("changed in _default._default: c") })

            kill(child.processIdentifier, SIGINT)
            await waitForExit(child)
            #expect(child.terminationStatus == 0)
            let text = output()
            let tables = text.components(separatedBy: "\n\n").map { block in
                block.split(separator: "\n").filter { !$0.hasPrefix("results at") && !$0.hasPrefix("changed in") }
            }
            #expect(tables == [["id", "--", "a", "1 row"], ["id", "--", "a", "b", "2 rows"]], "\(text)")
            #expect(text.components(separatedBy: "results at").count == 3, "c leaves the results equal: no re-print")
            #expect(text.contains("changed in _default._default: b\n"))
        }
    }

    /// Starts `couchette watch ARGUMENTS` (without colours) printing into a new file at `outputPath`.
    static func startWatch(_ arguments: [String], outputPath: String) async throws -> Process {
        _ = FileManager.default.createFile(atPath: outputPath, contents: nil)
        let child = Process()
        child.executableURL = URL(fileURLWithPath: CrashTests.toolPath)
        child.arguments = ["watch"] + arguments
        var environment = ProcessInfo.processInfo.environment
        environment["NO_COLOR"] = "1"
        child.environment = environment
        child.standardOutput = try FileHandle(forWritingTo: URL(fileURLWithPath: outputPath))
        child.standardError = FileHandle.nullDevice
        try await startProcess(child)
        return child
    }
}
