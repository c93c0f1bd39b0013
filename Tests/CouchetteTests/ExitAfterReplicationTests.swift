import Foundation
import Testing

@testable import Couchette

/// A process that ends right after its replication: the HTTP client's loop thread is then still
/// closing its kept-alive TLS connections (`SSL_CTX_free`) while the process runs its exit
/// handlers. Before ``RunningCurlLoops`` ended those threads first, OpenSSL's exit handler could
/// free its locks under them, and the command crashed at exit (seen under ThreadSanitizer, exit
/// status 66, after printing its result).
@Suite(.tags(.concurrency)) struct ExitAfterReplicationTests {
    static let stress = ProcessInfo.processInfo.environment["COUCHETTE_STRESS"] == "1"

    @Test func replicateCommandsOverTLSExitCleanlyOneAfterAnother() async throws {
        let directory = try TemporaryDirectory()
        let source = directory.path + "/source"
        #expect(try await CLI.run(["put", source, "apple", #"{"color":"red"}"#]).status == 0)
        let served = try await ServeProcess(directory.path + "/served", tls: true, arguments: ["--user", "ann", "--password", "pw"])
        defer { served.kill() }
        let pin = try #require(served.pin)
        for run in 1...(Self.stress ? 40 : 6) {
            let result = try await CLI.run(["replicate", source, served.url, "--pin", pin, "--user", "ann", "--password", "pw"])
            #expect(result.status == 0, "run \(run): \(result.stderr)")
        }
    }

    /// What the exit handler relies on: a shut-down loop's thread closes its connections, ends,
    /// and can be waited for; after that it starts no transfer.
    @Test func aShutDownLoopsThreadEndsAndCanBeWaitedFor() async throws {
        let loop = CurlLoop()
        loop.shutdown()
        #expect(RunningCurlLoops.shared.waitUntilEnded(loop, waitingAtMost: .seconds(20)))
        let transfer = HTTPTransfer(id: loop.makeID(), mode: .collect(maxBytes: 1), loop: loop)
        loop.start(transfer, HTTPClientRequest(method: "GET", url: "http://127.0.0.1:9/"))
        let message = await expectCouchetteError(.io) { _ = try await transfer.response() }
        #expect(message?.contains("shut down") == true)
    }
}
