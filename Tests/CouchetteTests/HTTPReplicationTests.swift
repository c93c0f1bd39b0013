import Foundation
import Testing
@testable import Couchette

/// Replication over real HTTP on loopback: a ``Replicator`` with a ``URLEndpoint`` (the
/// `RemotePeer` client) against a ``URLEndpointListener`` serving another database.
@Suite struct HTTPReplicationTests {
    private func httpConfig(_ local: Database, _ url: String, _ type: ReplicatorType) throws -> ReplicatorConfiguration {
        var config = ReplicatorConfiguration(target: URLEndpoint(url: URL(string: url)!))
        config.addCollection(try local.defaultCollection())
        config.replicatorType = type
        return config
    }

    @Test func pushPullAndBothOverHTTP() async throws {
        try await withTwoDatabases { local, remote in
            try await saveDocuments(30, prefix: "l", in: try local.defaultCollection())
            try await saveDocuments(20, prefix: "r", in: try remote.defaultCollection())
            try await withListener([try remote.defaultCollection()]) { listener, _ in
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

    @Test func conflictsConvergeOverHTTP() async throws {
        try await withTwoDatabases { local, remote in
            try await saveDocuments(1, prefix: "c", in: try local.defaultCollection())
            try await withListener([try remote.defaultCollection()]) { listener, _ in
                let url = listener.urls[0].absoluteString
                _ = await runToCompletion(try Replicator(config: try httpConfig(local, url, .push)))
                try await local.defaultCollection().save(document: try #require(await local.defaultCollection().document(id: "c0")).toMutable().setInt(1, forKey: "side"))
                try await remote.defaultCollection().save(document: try #require(await remote.defaultCollection().document(id: "c0")).toMutable().setInt(2, forKey: "side"))
                let both = try Replicator(config: try httpConfig(local, url, .pushAndPull))
                #expect(try #require(await runToCompletion(both).last).error == nil)
                // The resolution (written after the pull) travels back on a second run.
                #expect(try #require(await runToCompletion(both).last).error == nil)
                #expect(try treeShape(local.defaultCollection(), "c0") == treeShape(remote.defaultCollection(), "c0"))
                #expect(try currentRevisions(local.defaultCollection()) == currentRevisions(remote.defaultCollection()))
            }
        }
    }

    @Test func continuousReplicationFollowsRemoteEdits() async throws {
        try await withTwoDatabases { local, remote in
            try await withListener([try remote.defaultCollection()]) { listener, _ in
                var config = try httpConfig(local, listener.urls[0].absoluteString, .pull)
                config.continuous = true
                let replicator = try Replicator(config: config)
                await replicator.start()
                #expect(await eventually { await replicator.status.activity == .idle })
                try await remote.defaultCollection().save(document: MutableDocument(id: "live").setInt(7, forKey: "v"))
                #expect(try await eventually(timeout: .seconds(15)) { try await local.defaultCollection().document(id: "live") != nil })
                await replicator.stop()
                #expect(await eventually { await replicator.status.activity == .stopped })
            }
        }
    }

    @Test func credentialsAreCheckedAndNeverShown() async throws {
        try await withTwoDatabases { local, remote in
            try await saveDocuments(3, prefix: "a", in: try local.defaultCollection())
            try await withListener([try remote.defaultCollection()], configure: {
                $0.authenticator = ListenerPasswordAuthenticator { user, password in user == "bob" && password == "hunter2" }
            }) { listener, _ in
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
                let inURL = url.replacingOccurrences(of: "http://", with: "http://bob:hunter2@")
                let peer = try RemotePeer(url: URL(string: inURL)!)
                #expect(!peer.identifier.contains("hunter2") && !peer.identifier.contains("bob"))
                #expect(try await peer.info().name == "remote")
            }
        }
    }

    @Test func namedCollectionsUseKeyspaces() async throws {
        try await withTwoDatabases { local, remote in
            let localItems = try await local.createCollection(name: "items", scope: "shop")
            let remoteItems = try await remote.createCollection(name: "items", scope: "shop")
            try await saveDocuments(4, prefix: "i", in: localItems)
            try await withListener([try remote.defaultCollection(), remoteItems]) { _, base in
                var config = ReplicatorConfiguration(target: URLEndpoint(url: try #require(URL(string: base + "/remote"))))
                config.addCollection(localItems)
                config.replicatorType = .push
                #expect(try #require(await runToCompletion(try Replicator(config: config)).last).error == nil)
                #expect(try await remoteItems.count == 4)
                #expect(try await remote.defaultCollection().count == 0)
            }
        }
    }

    @Test func aListenerRestartedMidReplicationIsWaitedFor() async throws {
        try await withTwoDatabases { local, remote in
            try await saveDocuments(40, prefix: "k", in: try local.defaultCollection())
            var listenerConfig = URLEndpointListenerConfiguration(collections: [try remote.defaultCollection()])
            let first = URLEndpointListener(config: listenerConfig)
            try await first.start()
            let port = try #require(first.port)
            await first.stop()   // the server is down when the replicator starts

            var config = try httpConfig(local, "http://127.0.0.1:\(port)/remote", .push)
            config.maxAttempts = 100
            config.maxAttemptWaitTime = 0.2
            let replicator = try Replicator(config: config)
            let changes = replicator.changes()
            await replicator.start()
            var sawOffline = false
            while let change = await changes.next(timeout: .seconds(20)) {
                if change.status.activity == .offline {
                    sawOffline = true
                    break
                }
            }
            #expect(sawOffline)
            listenerConfig.port = port
            let second = URLEndpointListener(config: listenerConfig)
            try await second.start()
            var last: Replicator.Status?
            while let change = await changes.next(timeout: .seconds(30)) {
                last = change.status
                if change.status.activity == .stopped { break }
            }
            #expect(last?.activity == .stopped && last?.error == nil, "\(String(describing: last?.error))")
            #expect(try await remote.defaultCollection().count == 40)
            await second.stop()
        }
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
