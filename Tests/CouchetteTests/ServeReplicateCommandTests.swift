import Foundation
import Testing

/// `couchette serve` and `couchette replicate`, as two processes talking HTTP on loopback.
@Suite(.tags(.concurrency)) struct ServeReplicateCommandTests {
    @Test func replicateThroughAServedDatabaseThenStopOnInterrupt() async throws {
        let directory = try TemporaryDirectory()
        let source = directory.path + "/source", served = directory.path + "/served", copy = directory.path + "/copy"
        #expect(try await CLI.run(["put", source, "apple", #"{"color":"red"}"#]).status == 0)
        #expect(try await CLI.run(["put", source, "pear", #"{"color":"green"}"#]).status == 0)

        let outputPath = directory.path + "/serve.out"
        _ = FileManager.default.createFile(atPath: outputPath, contents: nil)
        let server = Process()
        server.executableURL = URL(fileURLWithPath: CrashTests.toolPath)
        server.arguments = ["serve", served, "--port", "0", "--user", "ann", "--password", "pw"]
        server.standardOutput = try FileHandle(forWritingTo: URL(fileURLWithPath: outputPath))
        server.standardError = FileHandle.nullDevice
        try await startProcess(server)
        defer { if server.isRunning { kill(server.processIdentifier, SIGKILL) } }
        let output = { (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? "" }
        let deadline = Date().addingTimeInterval(20)
        while !output().contains("http://"), Date() < deadline { try await Task.sleep(for: .milliseconds(50)) }
        let url = try #require(output().split(separator: "\n").first { $0.contains("http://") }).trimmingCharacters(in: .whitespaces)
        #expect(url.hasSuffix("/served"))

        let refused = try await CLI.run(["replicate", source, url, "--push", "--user", "ann", "--password", "wrong"])
        #expect(refused.status == 1 && refused.stderr.contains("(unauthorized)"), "\(refused.stderr)")
        #expect(!refused.stderr.contains("wrong"))

        let pushed = try await CLI.run(["replicate", source, url, "--push", "--user", "ann", "--password", "pw"])
        #expect(pushed.status == 0, "\(pushed.stderr)")
        #expect(pushed.stdout.hasPrefix("Pushed 2 documents, pulled 0, skipped 0 in "), "\(pushed.stdout)")
        #expect(pushed.stderr.contains("2/2 documents"))

        // Both ways now: the pull meets the two documents it pushed before; echoes are not counted.
        let again = try await CLI.run(["replicate", source, url, "--user", "ann", "--password", "pw"])
        #expect(again.status == 0 && again.stdout.hasPrefix("Pushed 0 documents, pulled 0, skipped 0 in "), "\(again.stdout)")

        let pulled = try await CLI.run(["replicate", copy, url, "--pull", "--user", "ann", "--password", "pw"])
        #expect(pulled.status == 0, "\(pulled.stderr)")
        #expect(pulled.stdout.hasPrefix("Pushed 0 documents, pulled 2, skipped 0 in "), "\(pulled.stdout)")
        #expect(try await CLI.run(["get", copy, "pear"]).stdout.contains(#""color":"green""#))

        kill(server.processIdentifier, SIGINT)
        await waitForExit(server)
        #expect(server.terminationStatus == 0)
        #expect(output().hasSuffix("Stopped.\n"))

        // Nobody listens any more: a clear error after the retries, exit status 1.
        let down = try await CLI.run(["replicate", source, url, "--push"])
        #expect(down.status == 1 && down.stderr.contains("cannot reach"), "\(down.stderr)")
        #expect(try await CLI.run(["replicate", source, url, "--push", "--pull"]).status == 2)
        #expect(try await CLI.run(["replicate", source, "ftp://x/y"]).status == 2)
        #expect(try await CLI.run(["serve", source, "--user", "ann"]).status == 2)
    }
}
