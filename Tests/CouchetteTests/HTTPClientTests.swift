import Foundation
import Testing

@testable import Couchette

/// `HTTPClient` (libcurl) against scripted loopback servers: keep-alive, gzip, idle timeouts
/// that fire on a server that never answers, heartbeats that keep a stream alive, backpressure
/// on a slow reader, and cancellation at every stage of a request.
@Suite(.tags(.concurrency)) struct HTTPClientTests {
    private static let okay = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 11\r\n\r\n{\"ok\":true}"

    /// Answers every request on a connection with `okay`.
    private static func answeringServer() throws -> ScriptedServer {
        try ScriptedServer { connection in
            while connection.readRequest() != nil {
                guard connection.write(okay) else { return }
            }
        }
    }

    @Test func requestsReuseOneKeptAliveConnection() async throws {
        let server = try Self.answeringServer()
        defer { server.stop() }
        let client = HTTPClient()
        for _ in 0..<3 {
            let response = try await client.data(for: HTTPClientRequest(method: "GET", url: server.url + "/db"))
            #expect(response.status == 200 && String(decoding: response.body, as: UTF8.self) == #"{"ok":true}"#)
            #expect(response.headers["content-type"] == "application/json")
        }
        #expect(server.accepted == 1)
    }

    @Test func aGzippedAnswerIsDecoded() async throws {
        let compressed = [UInt8](Data(base64Encoded: "H4sIAAAAAAACA6tWSs7PLShKLS5OTVGyUkqvyixQGCVGiVFiWBNKtQDAx8DM+QMAAA==")!)
        let askedForGzip = Locked(false)
        let server = try ScriptedServer { connection in
            guard let head = connection.readRequest() else { return }
            askedForGzip.withLock { $0 = head.lowercased().contains("accept-encoding:") && head.contains("gzip") }
            connection.write("HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: \(compressed.count)\r\n\r\n")
            connection.write(compressed)
        }
        defer { server.stop() }
        let response = try await HTTPClient().data(for: HTTPClientRequest(method: "GET", url: server.url + "/"))
        #expect(askedForGzip.withLock { $0 })
        #expect(String(decoding: response.body, as: UTF8.self) == #"{"compressed":""# + String(repeating: "gzip ", count: 200) + #""}"#)
    }

    @Test func aServerThatAcceptsAndNeverAnswersTimesOut() async throws {
        // Holds the connection far longer than the test waits: only the client's timer ends it.
        let server = try ScriptedServer { connection in
            _ = connection.readRequest()
            _ = connection.waitForClientClose(within: .seconds(300))
        }
        defer { server.stop() }
        var request = HTTPClientRequest(method: "POST", url: server.url + "/db/_bulk_docs", body: Data("{}".utf8))
        request.idleTimeout = .milliseconds(300)
        let started = ContinuousClock.now
        let message = await expectCouchetteError(.io) { _ = try await HTTPClient().data(for: request) }
        // Generous: the caller resumes on a cooperative thread, which the parallel suite keeps busy.
        #expect(ContinuousClock.now - started < .seconds(60))
        #expect(message?.contains("no data") == true, "\(message ?? "")")

        // The same through the replication peer: its request timeout is an idle limit.
        let peer = try RemotePeer(url: URL(string: server.url + "/db")!, requestTimeout: 0.3)
        await expectCouchetteError(.io) { _ = try await peer.info() }
    }

    @Test func noServerOnThePortIsAConnectError() async throws {
        let server = try Self.answeringServer()
        let url = server.url
        server.stop()  // the port is free again: connecting is refused
        await #expect(throws: HTTPConnectError.self) {
            _ = try await HTTPClient().data(for: HTTPClientRequest(method: "GET", url: url + "/"))
        }
    }

    @Test func aServerThatStopsMidHeadTimesOut() async throws {
        let server = try ScriptedServer { connection in
            _ = connection.readRequest()
            connection.write("HTTP/1.1 200 OK\r\nContent-Ty")
            _ = connection.waitForClientClose(within: .seconds(300))
        }
        defer { server.stop() }
        var request = HTTPClientRequest(method: "GET", url: server.url + "/db")
        request.idleTimeout = .milliseconds(300)
        let message = await expectCouchetteError(.io) { _ = try await HTTPClient().stream(for: request) }
        #expect(message?.contains("no data") == true, "\(message ?? "")")
    }

    @Test func heartbeatsKeepAQuietStreamAlive() async throws {
        let server = try ScriptedServer { connection in
            _ = connection.readRequest()
            connection.write("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
            for _ in 0..<10 {
                usleep(100_000)
                guard connection.write("1\r\n\n\r\n") else { return }
            }
            connection.write("4\r\nend\n\r\n0\r\n\r\n")
        }
        defer { server.stop() }
        var request = HTTPClientRequest(method: "GET", url: server.url + "/db/_changes?feed=continuous&heartbeat=100")
        request.idleTimeout = .milliseconds(400)  // shorter than the stream, longer than a heartbeat
        let stream = try await HTTPClient().stream(for: request)
        var body = Data()
        for try await chunk in stream { body += chunk }
        #expect(String(decoding: body, as: UTF8.self) == String(repeating: "\n", count: 10) + "end\n")
    }

    @Test func aSlowReaderPausesTheTransferAndGetsEveryByte() async throws {
        let total = 24 << 20
        let block = (0..<65536).map { UInt8(truncatingIfNeeded: $0 % 251) }
        let written = Locked(0)
        let server = try ScriptedServer { connection in
            _ = connection.readRequest()
            connection.write("HTTP/1.1 200 OK\r\nContent-Length: \(total)\r\n\r\n")
            var sent = 0
            while sent < total {
                guard connection.write(block) else { return }
                sent += block.count
                written.withLock { $0 = sent }
            }
        }
        defer { server.stop() }
        let limit = 64 * 1024
        let stream = try await HTTPClient().stream(for: HTTPClientRequest(method: "GET", url: server.url + "/big"), bufferLimit: limit)
        try await Task.sleep(for: .milliseconds(500))  // not reading
        #expect(stream.unreadByteCount <= limit + 64 * 1024, "\(stream.unreadByteCount) unread bytes")
        #expect(written.withLock { $0 } < total, "the server wrote everything while nobody read")
        var received = 0
        var intact = true
        for try await chunk in stream {
            // Compared block-aligned piece by piece (memcmp: a byte loop is slow in debug builds).
            chunk.withUnsafeBytes { bytes in
                var offset = 0
                while offset < bytes.count && intact {
                    let inBlock = (received + offset) % block.count
                    let length = min(block.count - inBlock, bytes.count - offset)
                    intact = block.withUnsafeBytes { memcmp($0.baseAddress! + inBlock, bytes.baseAddress! + offset, length) == 0 }
                    offset += length
                }
            }
            received += chunk.count
        }
        #expect(received == total && intact)
    }

    // MARK: - Cancellation

    @Test func cancelledBeforeConnectingNeverConnects() async throws {
        let server = try Self.answeringServer()
        defer { server.stop() }
        let client = HTTPClient()
        let task = Task {
            while !Task.isCancelled { await Task.yield() }
            return try await client.data(for: HTTPClientRequest(method: "GET", url: server.url + "/db"))
        }
        task.cancel()
        await #expect(throws: CancellationError.self) { _ = try await task.value }
        try await Task.sleep(for: .milliseconds(200))
        #expect(server.accepted == 0)
    }

    /// A server that sends `partial` and holds the connection: cancelling the request ends the
    /// transfer at once — the client closes the connection, timed on the server's thread (the
    /// caller's resumption also waits for a cooperative thread, which the parallel suite can
    /// keep busy for seconds; within a few seconds, not the minute of an idle timeout, allows
    /// for a loaded machine) — and the caller gets `CancellationError`.
    @Test(arguments: ["", "HTTP/1.1 200 OK\r\nContent-Le", "HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n{\"results\":["])
    func cancelledWhileWaitingEndsAtOnce(_ partial: String) async throws {
        let sent = Locked(false)
        let clientClosedAt = Locked<ContinuousClock.Instant?>(nil)
        let server = try ScriptedServer { connection in
            _ = connection.readRequest()
            connection.write(partial)
            sent.withLock { $0 = true }
            if connection.waitForClientClose(within: .seconds(300)) { clientClosedAt.withLock { $0 = .now } }
        }
        defer { server.stop() }
        let client = HTTPClient()
        for streamed in [false, true] {
            sent.withLock { $0 = false }
            clientClosedAt.withLock { $0 = nil }
            let task = Task {
                let request = HTTPClientRequest(method: "GET", url: server.url + "/db/_changes?feed=longpoll")
                if streamed {
                    let stream = try await client.stream(for: request)
                    for try await _ in stream {}
                } else {
                    _ = try await client.data(for: request)
                }
            }
            #expect(await eventually(timeout: .seconds(60)) { sent.withLock { $0 } })
            try await Task.sleep(for: .milliseconds(50))
            let cancelled = ContinuousClock.now
            task.cancel()
            await #expect(throws: CancellationError.self) { try await task.value }
            #expect(await eventually(timeout: .seconds(60)) { clientClosedAt.withLock { $0 } != nil }, "the connection stayed open")
            if let closed = clientClosedAt.withLock({ $0 }) { #expect(closed - cancelled < .seconds(5)) }
        }
    }

    @Test func cancellingAfterTheAnswerChangesNothing() async throws {
        let server = try Self.answeringServer()
        defer { server.stop() }
        let client = HTTPClient()
        let task = Task { try await client.data(for: HTTPClientRequest(method: "GET", url: server.url + "/db")) }
        let first = try await task.value
        task.cancel()
        #expect(first.status == 200)
        let second = try await client.data(for: HTTPClientRequest(method: "GET", url: server.url + "/db"))
        #expect(second.status == 200)
        #expect(server.accepted == 1)  // the connection stayed alive
    }

    @Test func aRenewedSessionCookieIsSentFromThenOn() async throws {
        let heads = Locked<[String]>([])
        let server = try ScriptedServer { connection in
            while let head = connection.readRequest() {
                heads.withLock { $0.append(head) }
                let body = #"{"db_name":"db","update_seq":"1-a"}"#
                guard
                    connection.write(
                        "HTTP/1.1 200 OK\r\nSet-Cookie: AuthSession=renewed; Version=1; Path=/; HttpOnly\r\n"
                            + "Set-Cookie: other=x; Path=/\r\nContent-Length: \(body.utf8.count)\r\n\r\n" + body)
                else { return }
            }
        }
        defer { server.stop() }
        let peer = try RemotePeer(url: URL(string: server.url + "/db")!, headers: ["Cookie": "AuthSession=first"])
        _ = try await peer.info()
        _ = try await peer.info()
        let cookies = heads.withLock { $0 }.map { head in
            head.components(separatedBy: "\r\n").first { $0.lowercased().hasPrefix("cookie:") } ?? ""
        }
        #expect(cookies == ["Cookie: AuthSession=first", "Cookie: AuthSession=renewed"])
    }
}
