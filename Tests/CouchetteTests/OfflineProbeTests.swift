import Foundation
import Testing

@testable import Couchette

/// An offline replicator notices a server that came back by probing it (`GET /` while the
/// server is unreachable) instead of waiting out its backoff, which still governs failures
/// after connecting.
@Suite(.serialized, .tags(.concurrency)) struct OfflineProbeTests {
    /// Stretches each backoff the replicator waits while its server is unreachable to an hour,
    /// so that only a probe can end it within the test: no clock is read.
    struct HourLongBackoff: ForwardingPeer {
        let base: any ReplicationPeer
        let stretched: Locked<Int>

        func awaitRetry(within wait: Duration) async throws {
            guard let remote = base as? RemotePeer, remote.isUnreachable.withLock({ $0 }) else {
                return try await base.awaitRetry(within: wait)
            }
            stretched.withLock { $0 += 1 }
            try await base.awaitRetry(within: .seconds(3600))
        }
    }

    @Test func aRestartedListenerIsNoticedWithoutWaitingOutTheBackoff() async throws {
        try await withTwoDatabases { local, remote in
            var listenerConfig = plainHTTPListenerConfiguration([try remote.defaultCollection()])
            let first = URLEndpointListener(config: listenerConfig)
            try await first.start()
            let port = try #require(first.port)
            let stretched = Locked(0)
            let replicator = try Replicator(config: continuousPullConfig(local, from: "http://127.0.0.1:\(port)/remote", heartbeat: 2)) {
                HourLongBackoff(base: $0, stretched: stretched)
            }
            await replicator.start()
            #expect(await eventually(timeout: .seconds(60)) { await replicator.status.activity == .idle })

            await first.stop()
            // Offline, and waiting an hour-long backoff that only a probe can cut short.
            #expect(await eventually(timeout: .seconds(60)) { stretched.withLock { $0 } > 0 })
            #expect(await replicator.status.activity == .offline)
            try await remote.defaultCollection().save(document: MutableDocument(id: "while-away"))
            listenerConfig.port = port
            let second = URLEndpointListener(config: listenerConfig)
            try await second.start()
            #expect(try await eventually(timeout: .seconds(60)) { try await local.defaultCollection().document(id: "while-away") != nil })
            await replicator.stop()
            #expect(await eventually(timeout: .seconds(30)) { await replicator.status.activity == .stopped })
            await second.stop()
        }
    }
}
