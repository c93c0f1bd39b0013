import Foundation
import Testing

@testable import Couchette

/// Replication over real HTTP through a ``FaultProxy`` that drops connections at random points
/// (before a request, inside a request, inside a response — its status line, its headers, its
/// body or chunk framing — after a response) and delays some: the process survives every cut,
/// and after every run both databases hold identical documents and revision trees.
@Suite(.serialized, .tags(.concurrency)) struct HTTPFaultTests {
    static let stress = ProcessInfo.processInfo.environment["COUCHETTE_STRESS"] == "1"

    /// 8 runs (the 20 under COUCHETTE_STRESS=1, which CI sets), one seed each. Each run
    /// has a collection of its own in both databases, all served by one listener (so the runs
    /// share one listener start).
    @Test func droppedConnectionsAtRandomPointsStillConverge() async throws {
        let runs = Self.stress ? 20 : 8
        var injected: [FaultProxy.Fault: Int] = [:]
        var cuts: [FaultProxy.CutPoint: Int] = [:]
        var conflicts = 0
        try await withTwoDatabases { local, remote in
            var pairs: [(mine: Collection, theirs: Collection)] = []
            for run in 1...runs {
                pairs.append(
                    (
                        try await local.createCollection(name: "run\(run)", scope: "faults"),
                        try await remote.createCollection(name: "run\(run)", scope: "faults")
                    ))
            }
            try await withListener(pairs.map(\.theirs)) { listener, _ in
                for (seed, pair) in zip(UInt64(1)..., pairs) {
                    let run = try await Self.replicateThroughFaults(
                        seed: seed, pair.mine, pair.theirs, port: try #require(listener.port),
                        edits: Self.stress ? 20 : 12)
                    injected.merge(run.faults, uniquingKeysWith: +)
                    cuts.merge(run.cuts, uniquingKeysWith: +)
                    conflicts += run.conflicts
                }
                // Every broken connection was closed on the listener's side too.
                #expect(await eventually(timeout: .seconds(20)) { listener.status.connectionCount == 0 }, "\(listener.status)")
            }
        }
        // Every kind of fault happened and conflicts were made: the runs cannot pass vacuously.
        #expect(Set(injected.keys) == Set(FaultProxy.Fault.allCases), "\(injected)")
        // Answers were cut at every point, inside their headers and their chunk framing included.
        #expect(Set(cuts.keys) == Set(FaultProxy.CutPoint.allCases), "\(cuts)")
        #expect(conflicts > 0)
    }

    /// Both collections share a few documents, then both sides create, edit and delete documents
    /// of one pool of ids (conflicting edits, edit against deletion, the same id created twice);
    /// push-and-pull through a fresh proxy until a run finds nothing left to do. Returns the
    /// faults injected, where answers were cut, and how many documents had been in conflict.
    static func replicateThroughFaults(
        seed: UInt64, _ mine: Collection, _ theirs: Collection, port: UInt16,
        edits: Int
    ) async throws -> (faults: [FaultProxy.Fault: Int], cuts: [FaultProxy.CutPoint: Int], conflicts: Int) {
        var random = seed &* 0x9E37_79B9_7F4A_7C15
        try await ReplicationFaultTests.randomEdits(mine, seed: &random, count: 6)
        let proxy = try FaultProxy(upstreamPort: port, seed: seed)
        defer { proxy.stop() }
        // The listener serves `theirs` as the keyspace remote.faults.runN.
        var config = ReplicatorConfiguration(target: URLEndpoint(url: proxy.url(ListenerRouter.keyspaceName(theirs))))
        config.addCollection(mine)
        config.maxAttempts = 10_000
        config.maxAttemptWaitTime = 0.002
        let shared = await runToCompletion(try Replicator(config: config, batchSize: 4)).last
        #expect(shared?.error == nil, "seed \(seed): \(String(describing: shared?.error))")

        try await ReplicationFaultTests.randomEdits(mine, seed: &random, count: edits)
        try await ReplicationFaultTests.randomEdits(theirs, seed: &random, count: edits)
        proxy.setFaultRate(250)
        let last = await runToCompletion(try Replicator(config: config, batchSize: 4)).last
        #expect(
            last?.activity == .stopped && last?.error == nil,
            "seed \(seed): \(String(describing: last?.activity)) \(String(describing: last?.error)) proxy sockets \(proxy.openSockets) \(proxy.faults)\n\(proxy.log.suffix(40).joined(separator: "\n"))"
        )
        // Conflict resolutions written after pulling travel back on the next runs.
        var settled = false
        for _ in 0..<8 {
            let again = await runToCompletion(try Replicator(config: config, batchSize: 4)).last
            #expect(again?.error == nil, "seed \(seed): \(String(describing: again?.error))")
            if again?.progress.total == 0 { settled = true; break }
        }
        #expect(settled, "seed \(seed): replication never settled")
        #expect(proxy.droppedConnections > 0, "seed \(seed): no connection was dropped")
        try await expectConverged(mine, theirs, "seed \(seed):")
        let conflicts = try currentRevisions(mine).keys.filter { try mine.revisionTree(id: $0).leafIndices.count > 1 }.count
        return (proxy.faults, proxy.cuts, conflicts)
    }
}
