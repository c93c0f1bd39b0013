import Foundation
import Testing

@testable import Couchette

/// Cancelling a `RemotePeer` request while its answer arrives (what `Replicator.stop()` does to a
/// worker mid-request) must end the request at once, and the peer must go on working.
@Suite(.serialized, .tags(.concurrency)) struct RequestCancellationTests {
    @Test func requestsCancelledMidFlightAlwaysEnd() async throws {
        let iterations = ProcessInfo.processInfo.environment["COUCHETTE_STRESS"] == "1" ? 2000 : 300
        try await withDatabase("remote") { db, _ in
            try await withListener([try db.defaultCollection()]) { listener, _ in
                let peer = try RemotePeer(url: listener.urls[0])
                let finished = Locked(0)
                let loop = Task.detached {
                    for index in 0..<iterations {
                        let request = Task { try await peer.info() }
                        // Cancel at varying points: before sending, in flight, as the answer lands.
                        if index % 3 != 0 { try? await Task.sleep(for: .microseconds(index % 40 * 50)) }
                        request.cancel()
                        _ = try? await request.value
                        finished.withLock { $0 += 1 }
                    }
                }
                // A slow machine (ThreadSanitizer under CI load) only slows the count; a request that never ends
                // stops it.
                let allEnded = await progressReaches(iterations) { finished.withLock { $0 } }
                #expect(allEnded, "\(finished.withLock { $0 }) of \(iterations) cancelled requests ended")
                if allEnded { await loop.value } else { loop.cancel() }
                // And the peer still works.
                #expect(try await peer.info().name == "remote")
            }
        }
    }
}
