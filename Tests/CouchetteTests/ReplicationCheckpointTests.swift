import Foundation
import Testing

@testable import Couchette

/// Checkpoints: `_local` documents in CouchDB's format on both sides, resuming, resetting.
@Suite(.tags(.concurrency)) struct ReplicationCheckpointTests {
    @Test func aStoppedReplicationResumesWithoutFetchingAnyDocumentTwice() async throws {
        try await withTwoDatabases { local, remote in
            try await saveDocuments(30, prefix: "c", in: try local.defaultCollection())
            let config = try makeConfig(local, remote, .push)
            // The first run dies at its third batch, with a non-retryable error.
            let dying = PeerProbe { name, call in name == "bulkGet" && call == 3 ? CouchetteError(.unauthorized, "gone") : nil }
            let first = try Replicator(config: config, batchSize: 10, wrap: dying.wrap)
            #expect((await runToCompletion(first).last?.error as? CouchetteError)?.code == .unauthorized)
            #expect(try await remote.defaultCollection().count == 20)

            let counting = PeerProbe()
            let second = try Replicator(config: config, batchSize: 10, wrap: counting.wrap)
            #expect(await runToCompletion(second).last?.error == nil)
            #expect(try await remote.defaultCollection().count == 30)
            #expect(dying.bulkGetItems + counting.bulkGetItems == 30)

            // Nothing changed: a third run fetches nothing and sees no change.
            let idle = PeerProbe()
            let third = try Replicator(config: config, batchSize: 10, wrap: idle.wrap)
            #expect(await runToCompletion(third).last?.progress.total == 0)
            #expect(idle.bulkGetItems == 0)
        }
    }

    /// Over HTTP, stopped while the third batch's request is held by a proxy: the next run lists,
    /// compares and fetches only what the first did not finish (counted on the wire), in both
    /// directions.
    @Test(arguments: [ReplicatorType.push, .pull])
    func aReplicationStoppedOverHTTPResumesWithoutFetchingAnyDocumentTwice(_ type: ReplicatorType) async throws {
        try await withTwoDatabases { local, remote in
            let (source, target) = type == .push ? (local, remote) : (remote, local)
            try await saveDocuments(30, prefix: "c", in: try source.defaultCollection())
            try await withListener([try remote.defaultCollection()]) { listener, _ in
                let proxy = try FaultProxy(upstreamPort: try #require(listener.port), seed: 1)
                defer { proxy.stop() }
                let config = try makeConfig(local, URLEndpoint(url: proxy.url("remote")), type)
                // Push compares with the target's _revs_diff; pull fetches with the source's _bulk_get.
                let held = type == .push ? "/_revs_diff" : "/_bulk_get"
                let seen = Locked(0)
                proxy.hold { request in
                    request.path.hasSuffix(held)
                        && seen.withLock {
                            $0 += 1; return $0 == 3
                        }
                }
                let first = try Replicator(config: config, batchSize: 10)
                await first.start()
                #expect(await eventually(timeout: .seconds(30)) { proxy.isHolding })
                await first.stop()
                proxy.releaseHeld()
                #expect(await eventually(timeout: .seconds(30)) { await first.status.activity == .stopped })
                #expect(try await target.defaultCollection().count == 20)
                let before = proxy.requests.count

                let second = await runToCompletion(try Replicator(config: config, batchSize: 10))
                #expect(second.last?.error == nil)
                #expect(second.last?.progress.total == 10, "the second run did not resume at the checkpoint")
                #expect(try await target.defaultCollection().count == 30)
                try await expectConverged(local.defaultCollection(), remote.defaultCollection())

                // On the wire: every document compared (push) or fetched (pull) exactly once.
                let ids = proxy.requests.filter { $0.path.hasSuffix(held) }.flatMap { request -> [String] in
                    if type == .push, case .dictionary(let entries)? = request.json { return Array(entries.keys) }
                    guard case .array(let docs)? = request.json?["docs"] else { return [] }
                    return docs.compactMap { if case .string(let id)? = $0["id"] { id } else { nil } }
                }
                #expect(ids.count == 30 && Set(ids) == Set((0..<30).map { "c\($0)" }), "\(ids.sorted())")
                // The second run asked for changes after the checkpoint, never from the start.
                let resumed = proxy.requests[before...].filter { $0.path.hasSuffix("/_changes") }
                #expect(type == .push || (!resumed.isEmpty && resumed.allSatisfy { $0.target.contains("since=") }))
            }
        }
    }

    @Test func checkpointsSurviveReopeningBothDatabases() async throws {
        let directory = try TemporaryDirectory()
        var local = try directory.open("local")
        var remote = try directory.open("remote")
        try await saveDocuments(6, prefix: "k", in: try local.defaultCollection())
        _ = await runToCompletion(try Replicator(config: try makeConfig(local, remote, .push)))
        try await local.close()
        try await remote.close()

        local = try directory.open("local")
        remote = try directory.open("remote")
        try await saveDocuments(2, prefix: "later", in: try local.defaultCollection())
        let probe = PeerProbe()
        let replicator = try Replicator(config: try makeConfig(local, remote, .push), wrap: probe.wrap)
        #expect(await runToCompletion(replicator).last?.progress.total == 2)
        #expect(probe.bulkGetItems == 2)
        #expect(try await remote.defaultCollection().count == 8)
        try await local.close()
        try await remote.close()
    }

    @Test func checkpointsUseCouchDBsFormatOnBothSides() async throws {
        try await withTwoDatabases { local, remote in
            try await saveDocuments(3, prefix: "f", in: try local.defaultCollection())
            let replicator = try Replicator(config: try makeConfig(local, remote, .push))
            _ = await runToCompletion(replicator)
            let links = try await replicator.resolveLinks()
            let worker = try ReplicationWorker(link: links[0], isPush: true, number: 0, replicator: replicator)
            #expect(worker.replicationID.wholeMatch(of: /[0-9a-f]{32}/) != nil)
            let mine = try #require(try local.defaultCollection().localDocument(id: worker.replicationID))
            let theirs = try #require(try remote.defaultCollection().localDocument(id: worker.replicationID))
            #expect(mine["session_id"] == theirs["session_id"])
            #expect(mine["source_last_seq"] == .int(3))
            #expect(mine["replication_id_version"] == .int(3))
            guard case .array(let history)? = mine["history"], let entry = history.first else {
                Issue.record("no history"); return
            }
            #expect(entry["recorded_seq"] == .int(3))
            #expect(entry["docs_written"] == .int(3))
            #expect(entry["session_id"] == mine["session_id"])
        }
    }

    @Test func resumeSequenceFollowsCouchDBsRules() {
        let source: Value = .dictionary([
            "session_id": .string("b"), "source_last_seq": .int(9),
            "history": .array([
                .dictionary(["session_id": .string("b"), "recorded_seq": .int(9)]),
                .dictionary(["session_id": .string("a"), "recorded_seq": .int(4)]),
            ]),
        ])
        let same: Value = .dictionary(["session_id": .string("b"), "history": .array([])])
        let older: Value = .dictionary([
            "session_id": .string("a"),
            "history": .array([.dictionary(["session_id": .string("a"), "recorded_seq": .int(4)])]),
        ])
        let foreign: Value = .dictionary(["session_id": .string("z"), "history": .array([])])
        #expect(Checkpoint.resumeSequence(source: source, target: same) == .int(9))
        #expect(Checkpoint.resumeSequence(source: source, target: older) == .int(4))
        #expect(Checkpoint.resumeSequence(source: source, target: foreign) == nil)
        #expect(Checkpoint.resumeSequence(source: nil, target: same) == nil)
    }

    @Test(arguments: Transport.allCases)
    func resetComparesEverythingAgainButSendsNothingPresent(over transport: Transport) async throws {
        try await withTwoDatabases(over: transport) { local, remote, endpoint in
            try await saveDocuments(8, prefix: "z", in: try local.defaultCollection())
            let probe = PeerProbe()
            let replicator = try Replicator(config: try makeConfig(local, endpoint, .push), wrap: probe.wrap)
            _ = await runToCompletion(replicator)
            #expect(probe.bulkGetItems == 8)
            #expect(await runToCompletion(replicator).last?.progress.total == 0)
            let reset = try #require(await runToCompletion(replicator, reset: true).last)
            #expect(reset.progress.total == 8)
            #expect(probe.bulkGetItems == 8)

            // After the target lost documents (purged there), a reset sends them again.
            try await remote.defaultCollection().purge(id: "z3")
            _ = await runToCompletion(replicator)
            #expect(try await remote.defaultCollection().document(id: "z3") == nil)
            _ = await runToCompletion(replicator, reset: true)
            #expect(try await remote.defaultCollection().document(id: "z3") != nil)
        }
    }

    @Test func changingTheFilterStartsANewCheckpoint() {
        let plain = Checkpoint.replicationID(
            localUUID: "u", collection: "_default._default", remote: "r", isPush: true,
            documentIDs: nil, hasFilter: false)
        #expect(
            plain
                != Checkpoint.replicationID(
                    localUUID: "u", collection: "_default._default", remote: "r", isPush: false,
                    documentIDs: nil, hasFilter: false))
        #expect(
            plain
                != Checkpoint.replicationID(
                    localUUID: "u", collection: "_default._default", remote: "r", isPush: true,
                    documentIDs: ["a"], hasFilter: false))
        #expect(
            plain
                != Checkpoint.replicationID(
                    localUUID: "u", collection: "_default._default", remote: "r", isPush: true,
                    documentIDs: nil, hasFilter: true))
        #expect(
            plain
                == Checkpoint.replicationID(
                    localUUID: "u", collection: "_default._default", remote: "r", isPush: true,
                    documentIDs: nil, hasFilter: false))
    }
}
