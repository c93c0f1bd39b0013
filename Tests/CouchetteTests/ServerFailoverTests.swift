import Foundation
import Glibc
import Testing

@testable import Couchette
@testable import CouchetteBenchmarks

/// `URLEndpoint(urls:)`: several servers of one database. The replicator uses the first that
/// answers, fails over to the next when its server cannot be reached, keeps one checkpoint for
/// all of them, and names the server in use in its status. Two listeners serving the same
/// collection play a cluster's nodes; a port nobody listens on plays a node that is down.
@Suite(.serialized, .tags(.concurrency)) struct ServerFailoverTests {
    private func databaseURL(_ port: UInt16, scheme: String = "http") -> URL {
        URL(string: "\(scheme)://127.0.0.1:\(port)/remote")!
    }

    @Test func aStoppedServerFailsOverToTheNextAndTheCheckpointIsShared() async throws {
        try await withTwoDatabases { local, remote in
            let served = [try remote.defaultCollection()]
            let nodeA = URLEndpointListener(config: plainHTTPListenerConfiguration(served))
            let nodeB = URLEndpointListener(config: plainHTTPListenerConfiguration(served))
            try await nodeA.start()
            try await nodeB.start()
            let (portA, portB) = (try #require(nodeA.port), try #require(nodeB.port))
            let dead = try DeadPort()
            let urls = [databaseURL(dead.port), databaseURL(portA), databaseURL(portB)]
            let mine = try local.defaultCollection()
            try await saveDocuments(20, prefix: "a", in: mine)

            var config = ReplicatorConfiguration(target: URLEndpoint(urls: urls))
            config.addCollection(mine)
            config.continuous = true
            config.heartbeat = 2
            let calls = ChangesCalls()
            let replicator = try Replicator(config: config, wrap: calls.wrap)
            let shown = Locked<[URL]>([])
            let watcher = Task {
                for await change in replicator.changes() {
                    if let url = change.status.serverURL { shown.withLock { if $0.last != url { $0.append(url) } } }
                }
            }
            defer { watcher.cancel() }
            await replicator.start()
            #expect(
                try await eventually(timeout: .seconds(60)) {
                    let idle = await replicator.status.activity == .idle
                    return try await remote.defaultCollection().count == 20 && idle
                })
            #expect(await replicator.status.serverURL == urls[1], "the dead first server is skipped")

            // Node A goes down while the replicator follows it; new changes on both sides reach
            // the other side through node B.
            await nodeA.stop()
            try await saveDocuments(5, prefix: "b", in: mine)
            try await remote.defaultCollection().save(document: MutableDocument(id: "from-remote"))
            #expect(
                try await eventually(timeout: .seconds(60)) {
                    let pulled = try await mine.document(id: "from-remote") != nil
                    return try await remote.defaultCollection().count == 26 && pulled
                })
            #expect(await replicator.status.serverURL == urls[2])
            #expect(shown.withLock { $0 } == [urls[1], urls[2]], "the status names each server in use, in order")
            // Caught up both ways (the pulled document is a local change too) before stopping.
            #expect(try await eventually(timeout: .seconds(30)) { try await replicator.pendingDocumentIDs(for: mine).isEmpty })
            // The run went on from where it stood: neither direction read changes from the start again.
            #expect(calls.fromStart == ["local": 1, "remote": 1], "\(calls.fromStart)")
            await replicator.stop()
            #expect(await eventually(timeout: .seconds(30)) { await replicator.status.activity == .stopped })

            // A new replicator with the same servers in another order (and the one in use now
            // down too) reads the shared checkpoint through node B: only the new documents count.
            try await saveDocuments(3, prefix: "c", in: mine)
            var again = ReplicatorConfiguration(target: URLEndpoint(urls: [urls[1], urls[2], urls[0]]))
            again.addCollection(mine)
            again.replicatorType = .push
            let resumed = try Replicator(config: again)
            let last = try #require(await runToCompletion(resumed).last)
            #expect(last.error == nil, "\(String(describing: last.error))")
            #expect(last.progress.total == 3, "resumed from the shared checkpoint, not from the start")
            #expect(last.serverURL == urls[2])
            #expect(try await remote.defaultCollection().count == 29)
            await nodeB.stop()
            withExtendedLifetime(dead) {}
        }
    }

    /// Only an unreachable server is left: an answer — even an error — is the database's answer,
    /// and a certificate that fails its check stops the replicator rather than being routed around.
    @Test(arguments: ["401", "404", "tls"])
    func answersAndCertificateFailuresDoNotFailOver(_ failure: String) async throws {
        try await withTwoDatabases { local, remote in
            let next = try ScriptedServer { connection in
                while connection.readRequest() != nil {
                    guard connection.write("HTTP/1.1 500 Internal Server Error\r\nContent-Length: 0\r\n\r\n") else { return }
                }
            }
            defer { next.stop() }
            var listenerConfig = plainHTTPListenerConfiguration([try remote.defaultCollection()])
            var scheme = "http"
            switch failure {
            case "401":
                listenerConfig.authenticator = ListenerPasswordAuthenticator { _, _ in false }
            case "tls":
                listenerConfig.disableTLS = false
                scheme = "https"
            default:
                break
            }
            let listener = URLEndpointListener(config: listenerConfig)
            try await listener.start()
            let port = try #require(listener.port)
            let name = failure == "404" ? "missing" : "remote"
            var config = ReplicatorConfiguration(
                target: URLEndpoint(urls: [
                    URL(string: "\(scheme)://127.0.0.1:\(port)/\(name)")!, URL(string: next.url + "/" + name)!,
                ]))
            config.addCollection(try local.defaultCollection())
            config.replicatorType = .push
            config.maxAttempts = 1
            if failure == "tls" { config.pinnedServerCertificate = try TLSIdentity.createIdentity(commonName: "other").certificates[0] }
            let last = try #require(await runToCompletion(try Replicator(config: config)).last)
            let expected: CouchetteError.Code =
                switch failure {
                case "401": .unauthorized
                case "404": .http(status: 404)
                default: .tls
                }
            #expect((last.error as? CouchetteError)?.code == expected, "\(String(describing: last.error))")
            #expect(next.accepted == 0, "the replicator moved on to the next server")
            await listener.stop()
        }
    }

    @Test func everyServerDownIsOfflineUntilOneAnswers() async throws {
        try await withTwoDatabases { local, remote in
            let dead = try DeadPort()
            var listenerConfig = plainHTTPListenerConfiguration([try remote.defaultCollection()])
            let first = URLEndpointListener(config: listenerConfig)
            try await first.start()
            let port = try #require(first.port)
            await first.stop()
            var config = ReplicatorConfiguration(target: URLEndpoint(urls: [databaseURL(dead.port), databaseURL(port)]))
            config.addCollection(try local.defaultCollection())
            config.replicatorType = .pull
            config.continuous = true
            let replicator = try Replicator(config: config)
            await replicator.start()
            #expect(await eventually(timeout: .seconds(30)) { await replicator.status.activity == .offline })
            let error = await replicator.status.error as? CouchetteError
            #expect(error?.code == .io && error?.message.contains("any of the 2 servers") == true, "\(String(describing: error))")
            #expect(await replicator.status.serverURL == nil)

            try await remote.defaultCollection().save(document: MutableDocument(id: "back"))
            listenerConfig.port = port
            let second = URLEndpointListener(config: listenerConfig)
            try await second.start()
            #expect(try await eventually(timeout: .seconds(30)) { try await local.defaultCollection().document(id: "back") != nil })
            #expect(await replicator.status.serverURL == databaseURL(port))
            await replicator.stop()
            #expect(await eventually(timeout: .seconds(30)) { await replicator.status.activity == .stopped })
            await second.stop()
            withExtendedLifetime(dead) {}
        }
    }

    @Test func badServerListsAreRefusedAndCredentialsStayOutOfTheStatus() async throws {
        try await withTwoDatabases { local, remote in
            func replicator(_ urls: [String]) throws -> Replicator {
                var config = ReplicatorConfiguration(target: URLEndpoint(urls: urls.map { URL(string: $0)! }))
                config.addCollection(try local.defaultCollection())
                config.replicatorType = .push
                return try Replicator(config: config)
            }
            await expectCouchetteError(.invalidParameter) { _ = try replicator([]) }
            await expectCouchetteError(.invalidParameter) { _ = try replicator(["http://a:5984/db", "http://b:5984/other"]) }
            await expectCouchetteError(.invalidParameter) { _ = try replicator(["http://a:5984/db", "ftp://b/db"]) }
            #expect(URLEndpoint(url: URL(string: "http://a:5984/db")!).urls == [URL(string: "http://a:5984/db")!])

            try await withListener(
                [try remote.defaultCollection()],
                configure: {
                    $0.authenticator = ListenerPasswordAuthenticator { user, password in user == "bob" && password == "hunter2" }
                }
            ) { listener, base in
                let withCredentials = base.replacingOccurrences(of: "http://", with: "http://bob:hunter2@") + "/remote"
                let last = try #require(await runToCompletion(try replicator([withCredentials])).last)
                #expect(last.error == nil, "\(String(describing: last.error))")
                #expect(last.serverURL == URL(string: base + "/remote"))
            }
        }
    }
}

/// A loopback port held by a socket that does not listen: connecting is refused, and no
/// other test's server can take the port meanwhile.
final class DeadPort: Sendable {
    let port: UInt16
    private let socket: Int32

    init() throws {
        (socket, port) = try LoopbackSocket.bound()
    }

    deinit {
        close(socket)
    }
}

/// Counts, per side, the `_changes` reads that start from the beginning (`since` nil).
private final class ChangesCalls: Sendable {
    private let counts = Locked<[String: Int]>([:])

    var fromStart: [String: Int] { counts.withLock { $0 } }

    func wrap(_ peer: any ReplicationPeer) -> any ReplicationPeer {
        ChangesRecordingPeer(base: peer, side: peer is RemotePeer ? "remote" : "local", calls: self)
    }

    fileprivate func record(_ side: String, since: Value?) {
        if since == nil { counts.withLock { $0[side, default: 0] += 1 } }
    }
}

private struct ChangesRecordingPeer: ForwardingPeer {
    let base: any ReplicationPeer
    let side: String
    let calls: ChangesCalls

    func changes(since: Value?, limit: Int, documentIDs: [String]?, selector: MangoSelector?, wait: ChangesWait) async throws -> PeerChanges
    {
        calls.record(side, since: since)
        return try await base.changes(since: since, limit: limit, documentIDs: documentIDs, selector: selector, wait: wait)
    }
}
