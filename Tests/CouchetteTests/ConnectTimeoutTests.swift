import Foundation
import Glibc
import Testing

@testable import Couchette
@testable import CouchetteBenchmarks

/// Servers that never let a connection complete: a listening socket whose accept queue is full
/// (the kernel drops further SYNs, so TCP connecting never ends — loopback's stand-in for a host
/// that does not answer), and a TCP server that accepts and never answers the TLS handshake.
/// The connect timeout fires, the caller gets a clear error promptly, and cancelling while
/// connecting, during the handshake or while sending a body ends the request at once.
@Suite(.serialized, .tags(.concurrency)) struct ConnectTimeoutTests {
    /// A listening socket with a full accept queue, never accepting.
    final class FullBacklog: Sendable {
        let port: UInt16
        private let sockets: [Int32]

        init() throws {
            let (listening, port) = try LoopbackSocket.listen(backlog: 0)
            // Backlog 0 queues one connection; two more started connections make sure it is full.
            let fillers = (0..<3).compactMap { _ in LoopbackSocket.startConnecting(port: port) }
            usleep(100_000)
            self.port = port
            sockets = [listening] + fillers
        }

        var url: String { "http://127.0.0.1:\(port)" }

        func stop() {
            for socket in sockets { close(socket) }
        }
    }

    /// Accepts connections, never reads and never sends a byte (TLS clients wait for the
    /// server's hello; a body fills the socket buffers), until the client closes or the server stops.
    private func silentServer() throws -> ScriptedServer {
        try ScriptedServer { connection in
            // POLLRDHUP alone: arriving bytes do not wake it, the peer closing or `stop()` does.
            // 0x2000 is POLLRDHUP, which Glibc's module does not export.
            let pollReadHangUp: Int16 = 0x2000
            var descriptor = pollfd(fd: connection.socket, events: pollReadHangUp, revents: 0)
            _ = poll(&descriptor, 1, 300_000)
        }
    }

    private func stop(_ backlog: FullBacklog, _ silent: ScriptedServer) {
        backlog.stop()
        silent.stop()
    }

    private func request(_ url: String, connectTimeout: Duration) -> HTTPClientRequest {
        var request = HTTPClientRequest(method: "GET", url: url + "/db")
        request.connectTimeout = connectTimeout
        request.idleTimeout = .seconds(300)  // far longer: only the connect timeout may end it
        request.tls = HTTPClientTLS(
            pinnedCertificate: nil, pinnedFingerprint: nil, acceptOnlySelfSigned: true, trustedRoots: nil,
            clientCertificatePEM: nil, clientKeyPEM: nil)
        return request
    }

    @Test(arguments: ["tcp", "tls"])
    func theConnectTimeoutFiresWithAClearError(_ stage: String) async throws {
        let (backlog, silent) = try (FullBacklog(), silentServer())
        defer { stop(backlog, silent) }
        let url = stage == "tcp" ? backlog.url : silent.url.replacingOccurrences(of: "http://", with: "https://")
        let started = ContinuousClock.now
        do {
            _ = try await HTTPClient().data(for: request(url, connectTimeout: .milliseconds(500)))
            Issue.record("connecting to a server that never completes the \(stage) connection succeeded")
        } catch let error as HTTPConnectError {
            #expect(error.message.lowercased().contains("timed out") || error.message.lowercased().contains("timeout"), "\(error.message)")
        }
        // About 0.5 s alone; generous, as the caller resumes on a cooperative thread that the
        // parallel suite can keep busy for seconds — yet far below the 300 s idle limit.
        let elapsed = ContinuousClock.now - started
        #expect(elapsed >= .milliseconds(400) && elapsed < .seconds(60), "\(elapsed)")
        if stage == "tls" { #expect(silent.accepted == 1, "the TCP connection was made; the handshake never ended") }

        // Through the replication peer: a short request timeout bounds connecting too, and the
        // error says the server could not be reached.
        let peer = try RemotePeer(url: URL(string: url + "/db")!, requestTimeout: 0.5, tls: request(url, connectTimeout: .zero).tls)
        let message = await expectCouchetteError(.io) { _ = try await peer.info() }
        #expect(message?.contains("cannot reach") == true, "\(message ?? "")")
    }

    /// The idle limit can run out before the connect timeout (a busy machine, or a request whose
    /// idle limit is the shorter): a handshake that never ended is still "never connected".
    @Test(arguments: ["tcp", "tls"])
    func anIdleLimitRunningOutWhileConnectingReportsNeverConnected(_ stage: String) async throws {
        let (backlog, silent) = try (FullBacklog(), silentServer())
        defer { stop(backlog, silent) }
        let url = stage == "tcp" ? backlog.url : silent.url.replacingOccurrences(of: "http://", with: "https://")
        var shortIdle = request(url, connectTimeout: .seconds(60))
        shortIdle.idleTimeout = .milliseconds(300)
        do {
            _ = try await HTTPClient().data(for: shortIdle)
            Issue.record("connecting to a server that never completes the \(stage) connection succeeded")
        } catch let error as HTTPConnectError {
            #expect(error.message.contains("not made within"), "\(error.message)")
        }
    }

    @Test func aReplicatorFacingAServerThatNeverAcceptsStopsPromptlyWithTheError() async throws {
        let backlog = try FullBacklog()
        defer { backlog.stop() }
        try await withDatabase("local") { db, _ in
            var config = ReplicatorConfiguration(target: URLEndpoint(url: URL(string: backlog.url + "/remote")!))
            config.addCollection(try db.defaultCollection())
            config.maxAttempts = 1
            let started = ContinuousClock.now
            let replicator = try Replicator(config: config, options: ReplicationOptions(requestTimeout: 0.5), peers: EndpointPeers())
            let last = try #require(await runToCompletion(replicator).last)
            let error = try #require(last.error as? CouchetteError)
            #expect(error.code == .io && error.message.contains("cannot reach"), "\(error)")
            #expect(ContinuousClock.now - started < .seconds(15))
        }
    }

    /// Cancelling while TCP connects, while the TLS handshake waits, and while a body is being
    /// sent to a server that does not read it: the caller gets `CancellationError` at once (not
    /// after the 60 s connect timeout), and the client goes on working.
    @Test(arguments: ["connecting", "handshake", "sending"])
    func cancellingBeforeTheServerAnswersEndsAtOnce(_ stage: String) async throws {
        let (backlog, silent) = try (FullBacklog(), silentServer())
        defer { stop(backlog, silent) }
        var request = request(stage == "connecting" ? backlog.url : silent.url, connectTimeout: .seconds(60))
        switch stage {
        case "handshake":
            request.url = request.url.replacingOccurrences(of: "http://", with: "https://")
        case "sending":
            request.method = "POST"
            request.body = Data(count: 64 << 20)  // far more than the socket buffers hold
        default:
            break
        }
        let client = HTTPClient()
        let task = Task { [request] in try await client.data(for: request) }
        // Past the stage: the silent server has accepted (waited for, not assumed after a fixed
        // sleep: allocating and starting on a loaded machine can take longer), then a moment more
        // for the handshake or the body to be under way.
        if stage != "connecting" { #expect(await eventually(timeout: .seconds(20)) { silent.accepted == 1 }) }
        try await Task.sleep(for: .milliseconds(300))
        let cancelled = ContinuousClock.now
        task.cancel()
        await #expect(throws: CancellationError.self) { _ = try await task.value }
        // Well under a second alone; generous for a loaded machine, far below the 60 s timeout.
        let elapsed = ContinuousClock.now - cancelled
        #expect(elapsed < .seconds(20), "\(elapsed)")

        let answering = try ScriptedServer { connection in
            while connection.readRequest() != nil {
                guard connection.write("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}") else { return }
            }
        }
        defer { answering.stop() }
        #expect(try await client.data(for: HTTPClientRequest(method: "GET", url: answering.url + "/")).status == 200)
    }
}
