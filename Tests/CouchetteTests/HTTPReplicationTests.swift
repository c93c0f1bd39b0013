import Foundation
import Glibc
import Testing

@testable import Couchette

/// Replication over real HTTP on loopback: a ``Replicator`` with a ``URLEndpoint`` (the
/// `RemotePeer` client) against a ``URLEndpointListener`` serving another database — each test
/// over plain HTTP and over HTTPS (the listener's identity pinned), except those about one of them.
@Suite(.serialized, .tags(.concurrency)) struct HTTPReplicationTests {
    private func httpConfig(_ local: Database, _ url: String, _ type: ReplicatorType) throws -> ReplicatorConfiguration {
        var config = ReplicatorConfiguration(target: URLEndpoint(url: URL(string: url)!))
        config.addCollection(try local.defaultCollection())
        config.replicatorType = type
        try TestIdentity.pin(&config)
        return config
    }

    @Test(arguments: Transport.network)
    func pushPullAndBothOverHTTP(over transport: Transport) async throws {
        try await withTwoDatabases { local, remote in
            try await saveDocuments(30, prefix: "l", in: try local.defaultCollection())
            try await saveDocuments(20, prefix: "r", in: try remote.defaultCollection())
            try await withListener([try remote.defaultCollection()], over: transport) { listener, _ in
                let url = listener.urls[0].absoluteString
                let push = try Replicator(config: try httpConfig(local, url, .push))
                let pushed = try #require(await runToCompletion(push).last)
                #expect(pushed.error == nil, "\(String(describing: pushed.error))")
                #expect(pushed.progress.completed == 30)
                #expect(try await remote.defaultCollection().count == 50)

                let pull = try Replicator(config: try httpConfig(local, url, .pull))
                #expect(try #require(await runToCompletion(pull).last).error == nil)
                #expect(try await local.defaultCollection().count == 50)

                // Edits and a deletion on both sides, then push-and-pull converges.
                let doc = try #require(await local.defaultCollection().document(id: "r3")).toMutable().setString("edited", forKey: "origin")
                try await local.defaultCollection().save(document: doc)
                try await remote.defaultCollection().delete(document: try #require(await remote.defaultCollection().document(id: "l4")))
                let both = try Replicator(config: try httpConfig(local, url, .pushAndPull))
                #expect(try #require(await runToCompletion(both).last).error == nil)
                #expect(try await remote.defaultCollection().document(id: "r3")?.string(forKey: "origin") == "edited")
                #expect(try await local.defaultCollection().document(id: "l4") == nil)
                #expect(try currentRevisions(local.defaultCollection()) == currentRevisions(remote.defaultCollection()))
            }
        }
    }

    @Test(arguments: Transport.network)
    func conflictsConvergeOverHTTP(over transport: Transport) async throws {
        try await withTwoDatabases { local, remote in
            try await saveDocuments(1, prefix: "c", in: try local.defaultCollection())
            try await withListener([try remote.defaultCollection()], over: transport) { listener, _ in
                let url = listener.urls[0].absoluteString
                _ = await runToCompletion(try Replicator(config: try httpConfig(local, url, .push)))
                try await local.defaultCollection().save(
                    document: try #require(await local.defaultCollection().document(id: "c0")).toMutable().setInt(1, forKey: "side"))
                try await remote.defaultCollection().save(
                    document: try #require(await remote.defaultCollection().document(id: "c0")).toMutable().setInt(2, forKey: "side"))
                let both = try Replicator(config: try httpConfig(local, url, .pushAndPull))
                #expect(try #require(await runToCompletion(both).last).error == nil)
                // The resolution (written after the pull) travels back on a second run.
                #expect(try #require(await runToCompletion(both).last).error == nil)
                #expect(try treeShape(local.defaultCollection(), "c0") == treeShape(remote.defaultCollection(), "c0"))
                #expect(try currentRevisions(local.defaultCollection()) == currentRevisions(remote.defaultCollection()))
            }
        }
    }

    @Test(arguments: Transport.network)
    func continuousReplicationFollowsRemoteEdits(over transport: Transport) async throws {
        try await withTwoDatabases { local, remote in
            try await withListener([try remote.defaultCollection()], over: transport) { listener, _ in
                var config = try httpConfig(local, listener.urls[0].absoluteString, .pull)
                config.continuous = true
                let replicator = try Replicator(config: config)
                // Each status with the milliseconds since the start, for the messages below.
                let statuses = Locked<[String]>([])
                let started = ContinuousClock.now
                let watcher = Task {
                    for await change in replicator.changes() {
                        let at = (ContinuousClock.now - started) / .milliseconds(1)
                        statuses.withLock {
                            $0.append("\(Int(at)) ms \(change.status.activity) \(change.status.error.map { "\($0)" } ?? "")")
                        }
                    }
                }
                defer { watcher.cancel() }
                await replicator.start()
                #expect(
                    await eventually(timeout: .seconds(60)) { await replicator.status.activity == .idle },
                    "\(statuses.withLock { $0 })")
                try await remote.defaultCollection().save(document: MutableDocument(id: "live").setInt(7, forKey: "v"))
                statuses.withLock { $0.append("\(Int((ContinuousClock.now - started) / .milliseconds(1))) ms saved") }
                #expect(
                    try await eventually(timeout: .seconds(30)) { try await local.defaultCollection().document(id: "live") != nil },
                    "\(statuses.withLock { $0 })")
                await replicator.stop()
                #expect(
                    await eventually(timeout: .seconds(30)) { await replicator.status.activity == .stopped }, "\(statuses.withLock { $0 })")
            }
        }
    }

    @Test(arguments: Transport.network)
    func credentialsAreCheckedAndNeverShown(over transport: Transport) async throws {
        try await withTwoDatabases { local, remote in
            try await saveDocuments(3, prefix: "a", in: try local.defaultCollection())
            try await withListener(
                [try remote.defaultCollection()], over: transport,
                configure: {
                    $0.authenticator = ListenerPasswordAuthenticator { user, password in user == "bob" && password == "hunter2" }
                }
            ) { listener, _ in
                let url = listener.urls[0].absoluteString
                var wrong = try httpConfig(local, url, .push)
                wrong.authenticator = BasicAuthenticator(username: "bob", password: "wrong-password")
                let refused = try #require(await runToCompletion(try Replicator(config: wrong)).last)
                #expect((refused.error as? CouchetteError)?.code == .unauthorized)
                #expect(!String(describing: refused.error).contains("wrong-password"))

                var right = try httpConfig(local, url, .push)
                right.authenticator = BasicAuthenticator(username: "bob", password: "hunter2")
                #expect(try #require(await runToCompletion(try Replicator(config: right)).last).error == nil)
                #expect(try await remote.defaultCollection().count == 3)

                // Credentials in the URL work too and stay out of the peer's identifier.
                let inURL = url.replacingOccurrences(of: "://", with: "://bob:hunter2@")
                let peer = try RemotePeer(url: URL(string: inURL)!, tls: try httpConfig(local, url, .push).clientTLS)
                #expect(!peer.identifier.contains("hunter2") && !peer.identifier.contains("bob"))
                #expect(try await peer.info().name == "remote")
            }
        }
    }

    /// A replicator over `url` in batches of 10, quick retries, whose second `_bulk_docs` to the
    /// server waits at the returned gate until the test releases it.
    private func gatedReplicator(
        _ local: Database, _ url: String, _ type: ReplicatorType,
        maxAttempts: UInt
    ) throws -> (Replicator, Locked<(reached: Bool, released: Bool, calls: Int)>) {
        let gate = Locked((reached: false, released: false, calls: 0))
        var config = try httpConfig(local, url, type)
        config.maxAttempts = maxAttempts
        config.maxAttemptWaitTime = 0.2
        let replicator = try Replicator(config: config, batchSize: 10) { peer in
            peer is RemotePeer ? GatedPeer(base: peer, gate: gate) : peer
        }
        return (replicator, gate)
    }

    @Test(arguments: Transport.network)
    func aListenerStoppedMidReplicationIsWaitedForThenCompletes(over transport: Transport) async throws {
        try await withTwoDatabases { local, remote in
            try await saveDocuments(60, prefix: "k", in: try local.defaultCollection())
            var listenerConfig = try listenerConfiguration([try remote.defaultCollection()], over: transport)
            let first = URLEndpointListener(config: listenerConfig)
            try await first.start()
            let port = try #require(first.port)

            // The second batch waits at the gate until the listener is down, then goes to the
            // (closed) port: the replicator goes offline with some documents already delivered.
            let (replicator, gate) = try gatedReplicator(local, "\(transport.rawValue)://127.0.0.1:\(port)/remote", .push, maxAttempts: 100)
            let changes = replicator.changes()
            await replicator.start()
            #expect(await eventually(timeout: .seconds(20)) { gate.withLock { $0.reached } })
            await first.stop()
            gate.withLock { $0.released = true }
            var sawOffline = false
            while let change = await changes.next(timeout: .seconds(20)) {
                if change.status.activity == .offline { sawOffline = true; break }
            }
            #expect(sawOffline)
            let delivered = try await remote.defaultCollection().count
            #expect(delivered > 0 && delivered < 60)

            listenerConfig.port = port
            let second = URLEndpointListener(config: listenerConfig)
            try await second.start()
            var last: Replicator.Status?
            while let change = await changes.next(timeout: .seconds(30)) {
                last = change.status
                if change.status.activity == .stopped { break }
            }
            #expect(last?.activity == .stopped && last?.error == nil, "\(String(describing: last?.error))")
            #expect(try await remote.defaultCollection().count == 60)
            #expect(try currentRevisions(local.defaultCollection()) == currentRevisions(remote.defaultCollection()))
            await second.stop()
        }
    }

    /// `couchette serve` in another process, killed with SIGKILL while a push-and-pull is
    /// halfway, then restarted on the same port: the replicator goes offline, then completes, and
    /// both databases converge.
    @Test func aListenerProcessKilledMidReplicationThenRestartedConverges() async throws {
        let directory = try TemporaryDirectory()
        let served = try directory.open("served")
        try await saveDocuments(15, prefix: "s", in: try served.defaultCollection())
        try await served.close()
        let local = try directory.open("local")
        try await saveDocuments(60, prefix: "k", in: try local.defaultCollection())

        var server = try await ServeProcess(directory.path + "/served", port: 0)
        let port = server.port
        let (replicator, gate) = try gatedReplicator(local, "http://127.0.0.1:\(port)/served", .pushAndPull, maxAttempts: 1_000)
        let changes = replicator.changes()
        await replicator.start()
        #expect(await eventually(timeout: .seconds(30)) { gate.withLock { $0.reached } })
        server.kill()
        gate.withLock { $0.released = true }
        var sawOffline = false
        while let change = await changes.next(timeout: .seconds(30)) {
            if change.status.activity == .offline { sawOffline = true; break }
        }
        #expect(sawOffline)

        server = try await ServeProcess(directory.path + "/served", port: port)
        var last: Replicator.Status?
        while let change = await changes.next(timeout: .seconds(30)) {
            last = change.status
            if change.status.activity == .stopped { break }
        }
        #expect(last?.activity == .stopped && last?.error == nil, "\(String(describing: last?.error))")
        await server.interrupt()
        let reopened = try directory.open("served")
        #expect(try await reopened.defaultCollection().count == 75)
        try await expectConverged(local.defaultCollection(), reopened.defaultCollection())
        try await reopened.close()
        try await local.close()
    }

    @Test func remotePeerErrors() async throws {
        // Nothing listens on the port: a retryable .io error.
        let listener = try await withDatabase("gone") { db, _ in
            try await withListener([try db.defaultCollection()]) { listener, _ in listener.port! }
        }
        let peer = try RemotePeer(url: URL(string: "http://127.0.0.1:\(listener)/gone")!)
        await expectCouchetteError(.io) { _ = try await peer.info() }
        await expectCouchetteError(.invalidParameter) { _ = try RemotePeer(url: URL(string: "http://127.0.0.1:5984")!) }
        await expectCouchetteError(.invalidParameter) { _ = try RemotePeer(url: URL(string: "file:///tmp/x")!) }
        try await withDatabase("db") { db, _ in
            try await withListener([try db.defaultCollection()]) { _, base in
                let missing = try RemotePeer(url: URL(string: base + "/other")!)
                await expectCouchetteError(.http(status: 404)) { _ = try await missing.info() }
                let peer = try RemotePeer(url: URL(string: base + "/db")!)
                #expect(try await peer.localDocument(id: "cp") == nil)
                try await peer.putLocalDocument(id: "cp", .dictionary(["n": .int(1)]))
                try await peer.putLocalDocument(id: "cp", .dictionary(["n": .int(2)]))
                #expect(try await peer.localDocument(id: "cp") == .dictionary(["n": .int(2)]))
                try await peer.ensureFullCommit()
            }
        }
    }
}

/// Holds the second `_bulk_docs` of a run until the test releases it.
private struct GatedPeer: ForwardingPeer {
    let base: any ReplicationPeer
    let gate: Locked<(reached: Bool, released: Bool, calls: Int)>
    func bulkDocs(_ revisions: [PeerRevision]) async throws -> [DocumentWriteError] {
        let call = gate.withLock { state in
            state.calls += 1
            if state.calls == 2 { state.reached = true }
            return state.calls
        }
        if call == 2 {
            while !gate.withLock({ $0.released }) { try await Task.sleep(for: .milliseconds(10)) }
        }
        return try await base.bulkDocs(revisions)
    }
}
