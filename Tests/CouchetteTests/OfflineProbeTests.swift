import Foundation
import Testing

@testable import Couchette

/// An offline replicator notices a server that came back within about a probe interval (it
/// probes `GET /` while the server is unreachable) instead of waiting out its backoff, which
/// still governs failures after connecting.
@Suite(.serialized, .tags(.concurrency)) struct OfflineProbeTests {
    @Test func aRestartedListenerIsNoticedWithoutWaitingOutTheBackoff() async throws {
        try await withTwoDatabases { local, remote in
            var listenerConfig = plainHTTPListenerConfiguration([try remote.defaultCollection()])
            let first = URLEndpointListener(config: listenerConfig)
            try await first.start()
            let port = try #require(first.port)
            let replicator = try Replicator(config: continuousPullConfig(local, from: "http://127.0.0.1:\(port)/remote", heartbeat: 2))
            await replicator.start()
            #expect(await eventually(timeout: .seconds(60)) { await replicator.status.activity == .idle })

            await first.stop()
            #expect(await eventually(timeout: .seconds(30)) { await replicator.status.activity == .offline })
            // Failed attempts at about 0, 1, 3 and 7 s: the backoff is 8 s by now, so without
            // probes the next attempt would come at about 15 s.
            try await Task.sleep(for: .seconds(7.5))
            try await remote.defaultCollection().save(document: MutableDocument(id: "while-away"))
            listenerConfig.port = port
            let second = URLEndpointListener(config: listenerConfig)
            try await second.start()
            let restarted = ContinuousClock.now
            #expect(try await eventually(timeout: .seconds(30)) { try await local.defaultCollection().document(id: "while-away") != nil })
            let noticed = ContinuousClock.now - restarted
            #expect(noticed < .seconds(4), "the replicator took \(noticed) to notice the server")
            await replicator.stop()
            #expect(await eventually(timeout: .seconds(30)) { await replicator.status.activity == .stopped })
            await second.stop()
        }
    }
}
