import Foundation
import Testing

@testable import Couchette

/// `Examples/Todo` (`swift run todo`), driven through a pipe as a user would type, with a second
/// process (`couchette put`) writing to the same database.
@Suite struct TodoExampleTests {
    static var todoPath: String {
        URL(fileURLWithPath: CrashTests.toolPath).deletingLastPathComponent().appendingPathComponent("todo").path
    }

    @Test func theScreenFollowsCommandsAndAnotherProcesssCommits() async throws {
        try #require(FileManager.default.isExecutableFile(atPath: Self.todoPath), "build the todo example first")
        try #require(FileManager.default.isExecutableFile(atPath: CrashTests.toolPath))
        let directory = try TemporaryDirectory()
        let database = directory.path + "/todo"
        let outputPath = directory.path + "/todo.out"
        _ = FileManager.default.createFile(atPath: outputPath, contents: nil)
        let input = Pipe()
        let child = Process()
        child.executableURL = URL(fileURLWithPath: Self.todoPath)
        child.arguments = [database]
        child.standardInput = input
        child.standardOutput = try FileHandle(forWritingTo: URL(fileURLWithPath: outputPath))
        child.standardError = child.standardOutput
        try await startProcess(child)
        defer { if child.isRunning { kill(child.processIdentifier, SIGKILL) } }
        let output = { (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? "" }
        // Piped output is not a terminal: each render starts with a "----" line instead of clearing.
        let screen = { output().components(separatedBy: "----\n").last ?? "" }
        let send = { (line: String) in input.fileHandleForWriting.write(Data((line + "\n").utf8)) }

        #expect(await eventually { screen().contains("0 tasks, 0 done") && screen().contains("(nothing to do)") })
        send("a Buy milk")
        #expect(await eventually { screen().contains("1. [ ] Buy milk") }, "\(output())")
        send("t 1")
        #expect(await eventually { screen().contains("1. [x] Buy milk") && screen().contains("1 task, 1 done") })

        // Another process commits to the same database: the live query picks it up from the file.
        let put = Process()
        put.executableURL = URL(fileURLWithPath: CrashTests.toolPath)
        put.arguments = ["put", database, "call-ann", #"{"title": "Call Ann", "completed": false}"#, "--collection", "tasks"]
        put.standardOutput = FileHandle.nullDevice
        put.standardError = FileHandle.nullDevice
        try await startProcess(put)
        await waitForExit(put)
        #expect(put.terminationStatus == 0)
        #expect(
            await eventually { screen().contains("2. [ ] Call Ann") && screen().contains("2 tasks, 1 done") },
            "\(output())")

        send("d 1")
        #expect(await eventually { screen().contains("1. [ ] Call Ann") && !screen().contains("Buy milk") })
        send("t 7")
        #expect(await eventually { screen().contains("error: no task 7 (1…1)") })
        send("q")
        #expect(await eventually { !child.isRunning })
        #expect(child.terminationStatus == 0)
    }
}
