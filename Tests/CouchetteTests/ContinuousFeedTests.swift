import Foundation
import Testing

@testable import Couchette

/// Continuous replication over one `feed=continuous` `_changes` stream (`ContinuousChangesFeed`
/// under `RemotePeer`, the default), its fallback to long polls, and its dead-connection watchdog. The
/// servers are the listener's router behind a recording (and sometimes altering) HTTP server.
@Suite(.serialized, .tags(.concurrency)) struct ContinuousFeedTests {
    /// Serves `collection` like a listener, recording each request's path and query; `alter`
    /// may answer a request itself or rewrite it.
    final class RecordingServer: Sendable {
        let requests = Locked<[HTTPRequest]>([])
        let server: HTTPServer
        let port: UInt16

        init(_ collection: Collection, alter: @escaping @Sendable (HTTPRequest) -> (HTTPRequest, HTTPResponse?) = { ($0, nil) }) throws {
            let router = ListenerRouter(config: URLEndpointListenerConfiguration(collections: [collection]))
            let requests = self.requests
            server = HTTPServer(maximumBodySize: 1 << 20) { request in
                requests.withLock { $0.append(request) }
                let (forwarded, answer) = alter(request)
                if let answer { return answer }
                return await router.handle(forwarded)
            }
            port = try server.start(host: "127.0.0.1", port: 0, threads: 8)
        }

        var url: URL { URL(string: "http://127.0.0.1:\(port)/remote")! }

        func changesRequests(feed: String) -> [HTTPRequest] {
            requests.withLock { $0.filter { $0.path.hasSuffix("/_changes") && $0.query["feed"] == feed } }
        }
    }

    private func continuousPull(_ local: Database, from url: URL, heartbeat: TimeInterval) throws -> Replicator {
        try Replicator(config: continuousPullConfig(local, from: url.absoluteString, heartbeat: heartbeat))
    }

    @Test func oneStreamCarriesEveryChangeUntilTheReplicatorStops() async throws {
        try await withTwoDatabases { local, remote in
            let server = try RecordingServer(try remote.defaultCollection())
            let replicator = try continuousPull(local, from: server.url, heartbeat: 10)
            await replicator.start()
            #expect(await eventually(timeout: .seconds(60)) { await replicator.status.activity == .idle })
            for id in ["one", "two", "three"] {
                try await remote.defaultCollection().save(document: MutableDocument(id: id).setString(id, forKey: "v"))
                #expect(try await eventually(timeout: .seconds(30)) { try await local.defaultCollection().document(id: id) != nil })
            }
            let feeds = server.changesRequests(feed: "continuous")
            #expect(feeds.count == 1, "\(feeds.map(\.query))")
            #expect(feeds.first?.query["heartbeat"] == "5000" && feeds.first?.query["style"] == "all_docs")
            #expect(server.changesRequests(feed: "longpoll").isEmpty)
            #expect(await replicator.status.error == nil)

            await replicator.stop()
            #expect(await eventually(timeout: .seconds(30)) { await replicator.status.activity == .stopped })
            // Stopping closed the stream: the server's feed ends (it notices at its next heartbeat).
            #expect(await eventually(timeout: .seconds(30)) { server.server.counts.activeRequests == 0 })
            await server.server.stop()
        }
    }

    @Test func aServerThatGoesAwayIsWaitedForAndTheStreamReopens() async throws {
        try await withTwoDatabases { local, remote in
            var listenerConfig = plainHTTPListenerConfiguration([try remote.defaultCollection()])
            let first = URLEndpointListener(config: listenerConfig)
            try await first.start()
            let port = try #require(first.port)
            var config = try continuousPullConfig(local, from: "http://127.0.0.1:\(port)/remote", heartbeat: 2)
            config.maxAttemptWaitTime = 0.2
            let replicator = try Replicator(config: config)
            let changes = replicator.changes()
            await replicator.start()
            #expect(await eventually(timeout: .seconds(60)) { await replicator.status.activity == .idle })
            try await remote.defaultCollection().save(document: MutableDocument(id: "before"))
            #expect(try await eventually(timeout: .seconds(30)) { try await local.defaultCollection().document(id: "before") != nil })

            await first.stop()  // ends the open feed; reconnecting fails until the server is back
            var sawOffline = false
            while let change = await changes.next(timeout: .seconds(30)) {
                if change.status.activity == .offline { sawOffline = true; break }
            }
            #expect(sawOffline)
            try await remote.defaultCollection().save(document: MutableDocument(id: "while-away"))
            listenerConfig.port = port
            let second = URLEndpointListener(config: listenerConfig)
            try await second.start()
            #expect(try await eventually(timeout: .seconds(30)) { try await local.defaultCollection().document(id: "while-away") != nil })
            try await remote.defaultCollection().save(document: MutableDocument(id: "after"))
            #expect(try await eventually(timeout: .seconds(30)) { try await local.defaultCollection().document(id: "after") != nil })
            #expect(await eventually(timeout: .seconds(30)) { await replicator.status.activity == .idle })
            #expect(second.status.activeConnectionCount >= 1)  // the reopened stream
            await replicator.stop()
            #expect(await eventually(timeout: .seconds(30)) { await replicator.status.activity == .stopped })
            await second.stop()
        }
    }

    /// A server that refuses `feed=continuous` (400, as servers without it answer an unknown
    /// feed), or ignores it and answers a normal `_changes` body.
    @Test(arguments: ["refuses", "ignores"])
    func serversThatCannotStreamGetLongPolls(_ behaviour: String) async throws {
        try await withTwoDatabases { local, remote in
            let server = try RecordingServer(try remote.defaultCollection()) { request in
                guard request.query["feed"] == "continuous" else { return (request, nil) }
                if behaviour == "refuses" { return (request, .error(400, "bad_request", "unknown feed")) }
                var normal = request
                normal.query["feed"] = nil
                normal.query["heartbeat"] = nil
                return (normal, nil)
            }
            let replicator = try continuousPull(local, from: server.url, heartbeat: 1)
            await replicator.start()
            #expect(await eventually(timeout: .seconds(60)) { await replicator.status.activity == .idle })
            try await remote.defaultCollection().save(document: MutableDocument(id: "late"))
            #expect(try await eventually(timeout: .seconds(30)) { try await local.defaultCollection().document(id: "late") != nil })
            #expect(server.changesRequests(feed: "continuous").count == 1)
            #expect(!server.changesRequests(feed: "longpoll").isEmpty)
            #expect(await replicator.status.error == nil)
            await replicator.stop()
            #expect(await eventually(timeout: .seconds(30)) { await replicator.status.activity == .stopped })
            await server.server.stop()
        }
    }

    @Test func aSilentConnectionIsReportedDead() async throws {
        try await withDatabase("remote") { db, _ in
            let server = try RecordingServer(try db.defaultCollection()) { request in
                // Headers, then nothing at all until the client leaves.
                (
                    request,
                    HTTPResponse(
                        status: 200, headers: [("Content-Type", "application/json")],
                        body: .stream { stream in
                            while !Task.isCancelled { try? await Task.sleep(for: .milliseconds(50)) }
                        })
                )
            }
            let feed = ContinuousChangesFeed(
                client: HTTPClient(), url: "http://127.0.0.1:\(server.port)/remote/_changes?feed=continuous",
                headers: [], since: nil, heartbeat: .milliseconds(200), identifier: "silent",
                idleLimit: .milliseconds(800))
            await expectCouchetteError(.io) { _ = try await feed.next(limit: 10, timeout: .seconds(20)) }
            feed.close()
            await server.server.stop()
        }
    }

    @Test func rowsHeartbeatsAndTheEndOfAFeedAreParsed() async throws {
        try await withDatabase("remote") { db, _ in
            let server = try RecordingServer(try db.defaultCollection()) { request in
                (
                    request,
                    HTTPResponse(
                        status: 200, headers: [("Content-Type", "application/json")],
                        body: .stream { stream in
                            stream.write(#"{"seq":"1-abc","id":"a","changes":[{"rev":"1-x"}]}"# + "\n\n")
                            try? await Task.sleep(for: .milliseconds(100))
                            stream.write(#"{"seq":"2-abc","id":"b","changes":[{"rev":"1-y"},{"rev":"1-z"}],"del"#)  // split mid-line
                            try? await Task.sleep(for: .milliseconds(100))
                            stream.write(#"eted":true}"# + "\n" + #"{"last_seq":"2-abc","pending":0}"# + "\n")
                        })
                )
            }
            let feed = ContinuousChangesFeed(
                client: HTTPClient(), url: "http://127.0.0.1:\(server.port)/remote/_changes?feed=continuous",
                headers: [], since: nil, heartbeat: .seconds(1), identifier: "fixture")
            var rows: [PeerChange] = []
            var end: Value?
            while end == nil {
                switch try await feed.next(limit: 10, timeout: .seconds(20)) {
                case .changes(let page): rows += page.results
                case .ended(let last): end = last
                case .quiet, .closed: Issue.record("the feed stopped before last_seq"); end = .null
                }
            }
            #expect(rows.map(\.id) == ["a", "b"] && rows.map(\.sequence) == [.string("1-abc"), .string("2-abc")])
            #expect(rows[1].leafRevisions == ["1-y", "1-z"] && rows[1].deleted && !rows[0].deleted)
            #expect(end == .string("2-abc"))
            #expect(feed.seek(to: .string("2-abc")) == false)  // ended and drained: a new feed is needed
            feed.close()
            await server.server.stop()
        }
    }
}
