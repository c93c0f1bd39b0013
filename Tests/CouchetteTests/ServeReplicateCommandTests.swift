import Foundation
import Testing

/// `couchette serve` and `couchette replicate`, as two processes talking HTTPS on loopback (the
/// client pins the fingerprint the server prints).
@Suite(.tags(.concurrency)) struct ServeReplicateCommandTests {
    @Test func replicateThroughAServedDatabaseThenStopOnInterrupt() async throws {
        let directory = try TemporaryDirectory()
        let source = directory.path + "/source", copy = directory.path + "/copy"
        #expect(try await CLI.run(["put", source, "apple", #"{"color":"red"}"#]).status == 0)
        #expect(try await CLI.run(["put", source, "pear", #"{"color":"green"}"#]).status == 0)

        let served = try await ServeProcess(directory.path + "/served", tls: true, arguments: ["--user", "ann", "--password", "pw"])
        defer { served.kill() }
        let server = served.process, url = served.url, pin = try #require(served.pin)
        let output = { served.output }
        #expect(url.hasSuffix("/served"))
        #expect(pin.count == 64)

        // Without the pin the self-signed certificate is untrusted; with another pin it is refused.
        let unpinned = try await CLI.run(["replicate", source, url, "--push", "--user", "ann", "--password", "pw"])
        #expect(unpinned.status == 1 && unpinned.stderr.contains("untrusted"), "\(unpinned.stderr)")
        let wrongPin = try await CLI.run([
            "replicate", source, url, "--push", "--pin", String(repeating: "ab", count: 32), "--user", "ann", "--password", "pw",
        ])
        #expect(wrongPin.status == 1 && wrongPin.stderr.contains("wrong pin"), "\(wrongPin.stderr)")

        let refused = try await CLI.run(["replicate", source, url, "--push", "--pin", pin, "--user", "ann", "--password", "wrong"])
        #expect(refused.status == 1 && refused.stderr.contains("(unauthorized)"), "\(refused.stderr)")
        #expect(!refused.stderr.contains("wrong"))

        let pushed = try await CLI.run(["replicate", source, url, "--push", "--pin", pin, "--user", "ann", "--password", "pw"])
        #expect(pushed.status == 0, "\(pushed.stderr)")
        #expect(pushed.stdout.hasPrefix("Pushed 2 documents, pulled 0, skipped 0 in "), "\(pushed.stdout)")
        #expect(pushed.stderr.contains("2/2 documents"))

        // Both ways now: the pull meets the two documents it pushed before; echoes are not counted.
        let again = try await CLI.run(["replicate", source, url, "--pin", pin, "--user", "ann", "--password", "pw"])
        #expect(again.status == 0 && again.stdout.hasPrefix("Pushed 0 documents, pulled 0, skipped 0 in "), "\(again.stdout)")

        // Cookie login: the password goes once to POST /_session, the session cookie from then on.
        #expect(try await CLI.run(["put", source, "plum", #"{"color":"purple"}"#]).status == 0)
        let session = try await CLI.run([
            "replicate", source, url, "--push", "--pin", pin, "--user", "ann", "--password", "pw", "--session",
        ])
        #expect(session.status == 0 && session.stderr.contains("Logged in as ann (session cookie)"), "\(session.stderr)")
        #expect(session.stdout.hasPrefix("Pushed 1 document, pulled 0, skipped 0 in "), "\(session.stdout)")
        let badLogin = try await CLI.run(["replicate", source, url, "--pin", pin, "--user", "ann", "--password", "nope", "--session"])
        #expect(
            badLogin.status == 1 && badLogin.stderr.contains("/_session") && badLogin.stderr.contains("(unauthorized)"),
            "\(badLogin.stderr)")
        #expect(try await CLI.run(["replicate", source, url, "--pin", pin, "--session"]).status == 2)

        let pulled = try await CLI.run(["replicate", copy, url, "--pull", "--pin", pin, "--user", "ann", "--password", "pw"])
        #expect(pulled.status == 0, "\(pulled.stderr)")
        #expect(pulled.stdout.hasPrefix("Pushed 0 documents, pulled 3, skipped 0 in "), "\(pulled.stdout)")
        #expect(try await CLI.run(["get", copy, "pear"]).stdout.contains(#""color":"green""#))

        kill(server.processIdentifier, SIGINT)
        await waitForExit(server)
        #expect(server.terminationStatus == 0)
        #expect(output().hasSuffix("Stopped.\n"))

        // Nobody listens any more: a clear error after the retries, exit status 1.
        let down = try await CLI.run(["replicate", source, url, "--push", "--pin", pin])
        #expect(down.status == 1 && down.stderr.contains("cannot reach"), "\(down.stderr)")
        #expect(try await CLI.run(["replicate", source, url, "--push", "--pull"]).status == 2)
        #expect(try await CLI.run(["replicate", source, "ftp://x/y"]).status == 2)
        #expect(try await CLI.run(["serve", source, "--user", "ann"]).status == 2)
    }
}
