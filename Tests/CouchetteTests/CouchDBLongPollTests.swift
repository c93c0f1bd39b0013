import Foundation
import Testing

@testable import Couchette
@testable import CouchetteBenchmarks

/// Long polls answered the way Apache CouchDB 3.5 answers them: the `200` head and
/// `{"results":[` at once, the rest when something changed or the wait ended (transcripts `a05`,
/// `a06`). The client waits on the held body without failing or spinning, and a continuous
/// replicator syncs through such a server (here one that cannot stream, so it long-polls).
@Suite(.tags(.concurrency)) struct CouchDBLongPollTests {
    /// One recorded `_changes?feed=longpoll` exchange: its response chunks and their times.
    private struct Recorded {
        let chunks: [(milliseconds: Double, data: String)]
        let lastSequence: Value
        let ids: [String]
    }

    private static func recorded(_ file: String, exchange: Int) throws -> Recorded {
        let text = try String(contentsOfFile: Fixtures.path("couchdb-transcripts/\(file)"), encoding: .utf8)
        let transcript = try JSON.parse(text)
        guard case .array(let exchanges)? = transcript["exchanges"], case .dictionary(let response)? = exchanges[exchange - 1]["response"],
            case .array(let chunks)? = response["chunks"], let body = response["body"], let last = body["last_seq"],
            case .array(let results)? = body["results"]
        else {
            throw CouchetteError(.invalidParameter, "\(file) has no long-poll exchange \(exchange)")
        }
        return Recorded(
            chunks: chunks.compactMap { chunk in
                guard case .string(let data)? = chunk["data"], let time = chunk["t_ms"]?.asDouble else { return nil }
                return (time, data)
            },
            lastSequence: last,
            ids: results.compactMap { if case .string(let id)? = $0["id"] { id } else { nil } })
    }

    /// Refuses `feed=continuous` (400); answers a long poll with `recorded`'s chunks at a third
    /// of their recorded times.
    private static func replaying(_ recorded: Recorded) throws -> ScriptedServer {
        try ScriptedServer { connection in
            while let head = connection.readRequest() {
                if head.contains("feed=continuous") {
                    let body = #"{"error":"bad_request","reason":"unknown feed"}"#
                    guard connection.write("HTTP/1.1 400 Bad Request\r\nContent-Length: \(body.utf8.count)\r\n\r\n" + body) else { return }
                    continue
                }
                guard head.contains("feed=longpoll") else { return }
                connection.write("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n")
                let started = ContinuousClock.now
                for chunk in recorded.chunks {
                    let due = started + .milliseconds(Int64(chunk.milliseconds / 3))
                    let wait = CurlTransfer.milliseconds(due - .now)
                    if wait > 0 { usleep(UInt32(wait * 1000)) }
                    guard connection.write(String(chunk.data.utf8.count, radix: 16) + "\r\n" + chunk.data + "\r\n") else { return }
                }
                guard connection.write("0\r\n\r\n") else { return }
            }
        }
    }

    @Test(arguments: [
        ("a05-changes-longpoll-idle.json", 1), ("a05-changes-longpoll-idle.json", 3), ("a06-changes-longpoll-change.json", 1),
        ("a06-changes-longpoll-change.json", 3),
    ])
    func aHeldLongPollBodyIsWaitedFor(_ file: String, _ exchange: Int) async throws {
        let recorded = try Self.recorded(file, exchange: exchange)
        let server = try Self.replaying(recorded)
        defer { server.stop() }
        let peer = try RemotePeer(url: URL(string: server.url + "/t_lp")!, requestTimeout: 5)
        let started = ContinuousClock.now
        let changes = try await peer.changes(since: .string("now"), limit: 100, documentIDs: nil, wait: .longpoll(timeout: .seconds(10)))
        #expect(changes.results.map(\.id) == recorded.ids)
        #expect(changes.lastSequence == recorded.lastSequence)
        // Not answered before the recorded body (a third of its time) was sent.
        let held = (recorded.chunks.last?.milliseconds ?? 0) / 3
        #expect(ContinuousClock.now - started >= .milliseconds(Int64(held * 0.9)))
        // It asked for a stream once, was refused, and long-polls from then on.
        #expect(!peer.streamsChanges.withLock { $0 })
    }

    @Test func aContinuousReplicatorSyncsThroughEarlyLongPollHeads() async throws {
        try await withTwoDatabases { local, remote in
            try await withListener([try remote.defaultCollection()]) { listener, _ in
                let proxy = try CouchDBStyleProxy(upstreamPort: try #require(listener.port))
                defer { proxy.stop() }
                let replicator = try Replicator(
                    config: continuousPullConfig(local, from: "http://127.0.0.1:\(proxy.port)/remote", heartbeat: 1))
                await replicator.start()
                #expect(await eventually(timeout: .seconds(60)) { await replicator.status.activity == .idle })
                try await remote.defaultCollection().save(document: MutableDocument(id: "late").setString("v", forKey: "k"))
                #expect(try await eventually(timeout: .seconds(30)) { try await local.defaultCollection().document(id: "late") != nil })
                #expect(proxy.refusedStreams == 1 && proxy.longPolls >= 1, "\(proxy.refusedStreams) \(proxy.longPolls)")
                #expect(await replicator.status.error == nil)
                let stopping = ContinuousClock.now
                await replicator.stop()
                #expect(await eventually(timeout: .seconds(30)) { await replicator.status.activity == .stopped })
                #expect(ContinuousClock.now - stopping < .seconds(5))
            }
        }
    }
}
