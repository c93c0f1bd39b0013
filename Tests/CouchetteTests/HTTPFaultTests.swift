import Foundation
import Testing
@testable import Couchette

/// Replication over real HTTP through a ``FaultProxy`` that drops connections at random points
/// (before a request, inside a request, inside a response, after a response) and delays some:
/// after every run both databases hold identical documents and revision trees.
@Suite(.serialized) struct HTTPFaultTests {
    static let stress = ProcessInfo.processInfo.environment["COUCHETTE_STRESS"] == "1"

    /// 20 runs (100 under COUCHETTE_STRESS=1), one seed each.
    @Test func droppedConnectionsAtRandomPointsStillConverge() async throws {
        var injected: [FaultProxy.Fault: Int] = [:]
        var conflicts = 0
        for seed in 1...UInt64(Self.stress ? 100 : (ProcessInfo.processInfo.environment["FAULT_RUNS"].flatMap(Int.init) ?? 20)) {
            let run = try await Self.replicateThroughFaults(seed: seed, edits: Self.stress ? 40 : 14)
            injected.merge(run.faults, uniquingKeysWith: +)
            conflicts += run.conflicts
        }
        // Every kind of fault happened and conflicts were made: the runs cannot pass vacuously.
        #expect(Set(injected.keys) == Set(FaultProxy.Fault.allCases), "\(injected)")
        #expect(conflicts > 0)
    }

    /// Both databases share a few documents, then both sides create, edit and delete documents of
    /// one pool of ids (conflicting edits, edit against deletion, the same id created twice);
    /// push-and-pull through the proxy until a run finds nothing left to do.
    /// Returns the faults injected and how many documents had been in conflict.
    static func replicateThroughFaults(seed: UInt64, edits: Int) async throws -> (faults: [FaultProxy.Fault: Int], conflicts: Int) {
        var faults: [FaultProxy.Fault: Int] = [:]
        var conflicts = 0
        try await withTwoDatabases { local, remote in
            let mine = try local.defaultCollection()
            let theirs = try remote.defaultCollection()
            var random = seed &* 0x9E37_79B9_7F4A_7C15
            try await ReplicationFaultTests.randomEdits(mine, seed: &random, count: 8)
            try await withListener([theirs]) { listener, _ in
                let proxy = try FaultProxy(upstreamPort: try #require(listener.port), seed: seed)
                defer { proxy.stop() }
                var config = ReplicatorConfiguration(target: URLEndpoint(url: proxy.url("remote")))
                config.addCollection(mine)
                config.batchSize = 4
                config.maxAttempts = 10_000
                config.maxAttemptWaitTime = 0.002
                let shared = await runToCompletion(try Replicator(config: config)).last
                #expect(shared?.error == nil, "seed \(seed): \(String(describing: shared?.error))")

                try await ReplicationFaultTests.randomEdits(mine, seed: &random, count: edits)
                try await ReplicationFaultTests.randomEdits(theirs, seed: &random, count: edits)
                proxy.setFaultRate(250)
                let last = await runToCompletion(try Replicator(config: config)).last
                #expect(last?.activity == .stopped && last?.error == nil,
                        "seed \(seed): \(String(describing: last?.activity)) \(String(describing: last?.error)) listener \(listener.status) proxy sockets \(proxy.openSockets) \(proxy.faults)\n\(proxy.log.suffix(40).joined(separator: "\n"))")
                // Conflict resolutions written after pulling travel back on the next runs.
                var settled = false
                for _ in 0..<8 {
                    let again = await runToCompletion(try Replicator(config: config)).last
                    #expect(again?.error == nil, "seed \(seed): \(String(describing: again?.error))")
                    if again?.progress.total == 0 { settled = true; break }
                }
                #expect(settled, "seed \(seed): replication never settled")
                #expect(proxy.droppedConnections > 0, "seed \(seed): no connection was dropped")
                faults = proxy.faults
            }
            try await expectConverged(mine, theirs, "seed \(seed):")
            conflicts = try currentRevisions(mine).keys.filter { try mine.revisionTree(id: $0).leafIndices.count > 1 }.count
        }
        return (faults, conflicts)
    }
}
