import Foundation
import Testing

@testable import Couchette

/// A peer whose calls fail at random, before the call or after it (the reply is lost although
/// the work was done), like a connection dropped at a random point.
struct FlakyPeer: ReplicationPeer {
    let base: any ReplicationPeer
    let random: Locked<UInt64>
    /// Failures per 1,000 calls.
    let rate: UInt64

    var identifier: String { base.identifier }

    /// Runs `call`, failing before or after it now and then.
    private func flaky<R>(_ name: String, _ call: () async throws -> R) async throws -> R {
        let roll = random.withLock { state -> UInt64 in
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return (state >> 33) % 2000
        }
        if roll < rate { throw CouchetteError(.io, "\(name): connection dropped before the request") }
        let result = try await call()
        if roll >= 1000 && roll - 1000 < rate { throw CouchetteError(.io, "\(name): connection dropped before the reply") }
        return result
    }

    func info() async throws -> PeerInfo { try await flaky("info") { try await base.info() } }
    func changes(since: Value?, limit: Int, documentIDs: [String]?, selector: MangoSelector?, wait: ChangesWait) async throws -> PeerChanges
    {
        try await flaky("changes") {
            try await base.changes(since: since, limit: limit, documentIDs: documentIDs, selector: selector, wait: wait)
        }
    }
    func revsDiff(_ revisions: [String: [String]]) async throws -> [String: RevsDiffResult] {
        try await flaky("revsDiff") { try await base.revsDiff(revisions) }
    }
    func bulkGet(_ requests: [RevisionRequest]) async throws -> [RevisionFetch] {
        try await flaky("bulkGet") { try await base.bulkGet(requests) }
    }
    func bulkDocs(_ revisions: [PeerRevision]) async throws -> [DocumentWriteError] {
        try await flaky("bulkDocs") { try await base.bulkDocs(revisions) }
    }
    func localDocument(id: String) async throws -> Value? { try await flaky("localDocument") { try await base.localDocument(id: id) } }
    func putLocalDocument(id: String, _ body: Value) async throws {
        try await flaky("putLocalDocument") { try await base.putLocalDocument(id: id, body) }
    }
    func ensureFullCommit() async throws { try await flaky("ensureFullCommit") { try await base.ensureFullCommit() } }
}

@Suite(.tags(.concurrency)) struct ReplicationFaultTests {
    static let stress = ProcessInfo.processInfo.environment["COUCHETTE_STRESS"] == "1"

    /// Random creates, edits and deletions on one side, from a shared pool of ids (so both sides
    /// edit the same documents and make conflicts).
    static func randomEdits(_ collection: Collection, seed: inout UInt64, count: Int) async throws {
        func next(_ bound: UInt64) -> Int {
            seed = seed &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return Int((seed >> 33) % bound)
        }
        for _ in 0..<count {
            let id = "doc-\(next(15))"
            if let existing = try await collection.document(id: id) {
                if next(4) == 0 {
                    try await collection.delete(document: existing)
                } else {
                    try await collection.save(document: existing.toMutable().setInt(next(1000), forKey: "value"))
                }
            } else {
                try await collection.save(document: MutableDocument(id: id).setInt(next(1000), forKey: "value"))
            }
        }
    }

    static let seeds: [UInt64] = stress ? [0x5EED, 0xBEEF, 0xCAFE, 0xD00D, 0xF00D] : [0x5EED]

    /// Random edits on both sides, then push-and-pull through peers that drop 15% of the calls;
    /// 20 rounds under COUCHETTE_STRESS=1, 4 otherwise.
    @Test(arguments: seeds)
    func droppedConnectionsAtRandomPointsStillConverge(seed start: UInt64) async throws {
        try await withTwoDatabases { local, remote in
            let runs = Self.stress ? 20 : 4
            var seed = start
            let random = Locked<UInt64>(start ^ 0xF1A7)
            let mine = try local.defaultCollection()
            let theirs = try remote.defaultCollection()
            var config = try makeConfig(local, remote)
            config.maxAttempts = 10_000
            config.maxAttemptWaitTime = 0.001
            for _ in 0..<runs {
                try await Self.randomEdits(mine, seed: &seed, count: 12)
                try await Self.randomEdits(theirs, seed: &seed, count: 12)
                let replicator = try Replicator(config: config, batchSize: 4) { FlakyPeer(base: $0, random: random, rate: 150) }
                let last = await runToCompletion(replicator).last
                #expect(last?.error == nil, "\(String(describing: last?.error))")
            }
            // Replicate (still through the faults) until a run finds nothing to do.
            for _ in 0..<8 {
                let replicator = try Replicator(config: config, batchSize: 4) { FlakyPeer(base: $0, random: random, rate: 150) }
                if await runToCompletion(replicator).last?.progress.total == 0 { break }
            }
            try await expectConverged(mine, theirs)
            #expect(try currentRevisions(mine).count == 15)
            try await local.performMaintenance(type: .integrityCheck)
            try await remote.performMaintenance(type: .integrityCheck)
        }
    }
}
