import Foundation
import Testing

@testable import Couchette

/// Replication between two real databases through ``DatabaseEndpoint``: directions, deletions,
/// purges, filters, streams, pending documents, errors.
@Suite(.tags(.concurrency)) struct ReplicatorTests {
    @Test func pushCopiesEveryDocument() async throws {
        try await withTwoDatabases { local, remote in
            try await saveDocuments(25, prefix: "p", in: try local.defaultCollection())
            let config = try makeConfig(local, remote, .push)
            let replicator = try Replicator(config: config, batchSize: 10)
            let statuses = await runToCompletion(replicator)
            let last = try #require(statuses.last)
            #expect(last.activity == .stopped)
            #expect(last.error == nil)
            #expect(last.progress.completed == 25 && last.progress.total == 25)
            #expect(try await remote.defaultCollection().count == 25)
            #expect(try await remote.defaultCollection().document(id: "p7")?.int(forKey: "n") == 7)
            #expect(try currentRevisions(local.defaultCollection()) == currentRevisions(remote.defaultCollection()))
            try await remote.performMaintenance(type: .integrityCheck)
        }
    }

    @Test func pullCopiesEveryDocumentAndFiresChangeFeeds() async throws {
        try await withTwoDatabases { local, remote in
            try await saveDocuments(12, prefix: "r", in: try remote.defaultCollection())
            let feed = try local.defaultCollection().changes()
            let replicator = try Replicator(config: try makeConfig(local, remote, .pull))
            let last = try #require(await runToCompletion(replicator).last)
            #expect(last.error == nil)
            #expect(try await local.defaultCollection().count == 12)
            var seen = Set<String>()
            while seen.count < 12, let change = await feed.next(timeout: .seconds(10)) { seen.formUnion(change.documentIDs) }
            #expect(seen == Set((0..<12).map { "r\($0)" }))
            #expect(try await remote.defaultCollection().count == 12)
        }
    }

    @Test func pushAndPullMergesBothSides() async throws {
        try await withTwoDatabases { local, remote in
            try await saveDocuments(10, prefix: "l", in: try local.defaultCollection())
            try await saveDocuments(10, prefix: "r", in: try remote.defaultCollection())
            let replicator = try Replicator(config: try makeConfig(local, remote))
            let last = try #require(await runToCompletion(replicator).last)
            #expect(last.error == nil)
            #expect(try await local.defaultCollection().count == 20)
            #expect(try await remote.defaultCollection().count == 20)
            #expect(try currentRevisions(local.defaultCollection()) == currentRevisions(remote.defaultCollection()))
            try await local.performMaintenance(type: .integrityCheck)
        }
    }

    @Test(arguments: Transport.allCases)
    func deletionsReplicateWithTheDeletedFlagAndPurgesStayLocal(over transport: Transport) async throws {
        try await withTwoDatabases(over: transport) { local, remote, endpoint in
            let collection = try local.defaultCollection()
            try await saveDocuments(3, prefix: "d", in: collection)
            let replicator = try Replicator(config: try makeConfig(local, endpoint, .push))
            _ = await runToCompletion(replicator)
            let events = replicator.documentReplications()
            try await collection.delete(document: try #require(try await collection.document(id: "d0")))
            try await collection.purge(id: "d1")
            #expect(await runToCompletion(replicator).last?.error == nil)
            let target = try remote.defaultCollection()
            #expect(try await target.document(id: "d0") == nil)
            #expect(try await target.count == 2)
            #expect(try await target.document(id: "d1") != nil)  // a purge is not replicated
            let event = try #require(await events.next(timeout: .seconds(10)))
            #expect(event.isPush)
            #expect(event.documents.map(\.id) == ["d0"])
            #expect(event.documents.first?.flags == .deleted)
            #expect(event.documents.first?.scope == "_default" && event.documents.first?.collection == "_default")
        }
    }

    @Test func continuousReplicationFollowsLiveEditsOnBothSides() async throws {
        try await withTwoDatabases { local, remote in
            var config = try makeConfig(local, remote)
            config.continuous = true
            let replicator = try Replicator(config: config)
            let changes = replicator.changes()
            await replicator.start()
            #expect(await eventually(timeout: .seconds(30)) { await replicator.status.activity == .idle })
            let mine = try local.defaultCollection()
            let theirs = try remote.defaultCollection()
            try await mine.save(document: MutableDocument(id: "from-local").setString("a", forKey: "v"))
            try await theirs.save(document: MutableDocument(id: "from-remote").setString("b", forKey: "v"))
            #expect(await eventually(timeout: .seconds(30)) { (try? await theirs.document(id: "from-local")) != nil })
            #expect(await eventually(timeout: .seconds(30)) { (try? await mine.document(id: "from-remote")) != nil })
            let edit = try #require(try await theirs.document(id: "from-local")).toMutable().setString("edited", forKey: "v")
            try await theirs.save(document: edit)
            #expect(
                await eventually(timeout: .seconds(30)) { (try? await mine.document(id: "from-local"))?.string(forKey: "v") == "edited" })
            try await mine.delete(document: try #require(try await mine.document(id: "from-remote")))
            #expect(await eventually(timeout: .seconds(30)) { (try? await theirs.document(id: "from-remote")) == nil })
            await replicator.stop()
            var activities: [Replicator.ActivityLevel] = []
            while let change = await changes.next(timeout: .seconds(10)) {
                activities.append(change.status.activity)
                if activities.count > 1 && change.status.activity == .stopped { break }
            }
            #expect(activities.first == .stopped)
            #expect(activities.contains(.idle) && activities.contains(.busy))
            #expect(activities.last == .stopped)
            #expect(await replicator.status.error == nil)
            #expect(try currentRevisions(mine) == currentRevisions(theirs))
        }
    }

    @Test(arguments: Transport.allCases)
    func statusAndDocumentStreamsReportARun(over transport: Transport) async throws {
        try await withTwoDatabases(over: transport) { local, remote, endpoint in
            try await saveDocuments(4, prefix: "s", in: try local.defaultCollection())
            let replicator = try Replicator(config: try makeConfig(local, endpoint, .push))
            let documents = replicator.documentReplications()
            let statuses = await runToCompletion(replicator)
            #expect(statuses.map(\.activity).first == .stopped)
            #expect(statuses.map(\.activity).contains(.connecting))
            #expect(statuses.map(\.activity).contains(.busy))
            #expect(statuses.last?.activity == .stopped)
            // connecting, then busy until the end: never back to connecting once busy.
            let activities = statuses.dropFirst().map(\.activity)
            let firstBusy = try #require(activities.firstIndex(of: .busy))
            #expect(activities[..<firstBusy].allSatisfy { $0 == .connecting })
            #expect(activities[firstBusy...].dropLast().allSatisfy { $0 == .busy })
            let event = try #require(await documents.next(timeout: .seconds(10)))
            #expect(Set(event.documents.map(\.id)) == ["s0", "s1", "s2", "s3"])
            #expect(event.documents.allSatisfy { $0.error == nil && $0.flags.isEmpty })
            // A late subscriber gets the current status first.
            let late = replicator.changes()
            #expect(await late.next(timeout: .seconds(5))?.status.activity == .stopped)

            // Pulled documents are reported as pulled, a remote deletion with the .deleted flag.
            let theirs = try remote.defaultCollection()
            try await theirs.delete(document: try #require(try await theirs.document(id: "s1")))
            try await theirs.save(document: MutableDocument(id: "t0"))
            let puller = try Replicator(config: try makeConfig(local, endpoint, .pull))
            let pulledEvents = puller.documentReplications()
            #expect(await runToCompletion(puller).last?.error == nil)
            let pulled = try #require(await pulledEvents.next(timeout: .seconds(10)))
            #expect(!pulled.isPush)
            #expect(Dictionary(uniqueKeysWithValues: pulled.documents.map { ($0.id, $0.flags) }) == ["s1": .deleted, "t0": []])
        }
    }

    @Test func aSubscriberThatLagsGetsEveryDocumentInFewerEvents() async throws {
        try await withTwoDatabases { local, remote in
            try await saveDocuments(200, prefix: "p", in: try local.defaultCollection())
            try await saveDocuments(200, prefix: "q", in: try remote.defaultCollection())
            let config = try makeConfig(local, remote, .pushAndPull)
            // 100 batches each way: more than a stream queues on its own
            let replicator = try Replicator(config: config, batchSize: 2)
            let documents = replicator.documentReplications()
            #expect(try #require(await runToCompletion(replicator).last).error == nil)
            // Every event was queued by now: the stream holds at most the threshold, plus one
            // merged event per kind (push, pull).
            var pushed: [String] = [], pulled: [String] = []
            var events = 0
            while pushed.count < 200 || pulled.count < 200, let event = await documents.next(timeout: .seconds(5)) {
                events += 1
                let ids = event.documents.map(\.id)
                #expect(ids.allSatisfy { $0.hasPrefix(event.isPush ? "p" : "q") }, "pushed and pulled documents mixed")
                if event.isPush { pushed += ids } else { pulled += ids }
            }
            #expect(events <= ChangeBuffer<DocumentReplication>.mergeThreshold + 2)
            #expect(pushed.count == 200 && Set(pushed).count == 200)
            #expect(pulled.count == 200 && Set(pulled).count == 200)
        }
    }

    @Test(arguments: Transport.allCases)
    func filtersSelectDocumentsAndSeeDeletions(over transport: Transport) async throws {
        try await withTwoDatabases(over: transport) { local, remote, endpoint in
            let collection = try local.defaultCollection()
            for n in 0..<6 {
                try await collection.save(document: MutableDocument(id: "f\(n)").setBoolean(n % 2 == 0, forKey: "public"))
            }
            let deletedSeen = Locked(false)
            var filtered = CollectionConfiguration()
            filtered.pushFilter = { document, flags in
                if flags.contains(.deleted) { deletedSeen.withLock { $0 = true }; return true }
                return document.boolean(forKey: "public")
            }
            let replicator = try Replicator(config: try makeConfig(local, endpoint, .push, filtered))
            _ = await runToCompletion(replicator)
            let target = try remote.defaultCollection()
            #expect(try await target.count == 3)
            #expect(try await target.document(id: "f1") == nil)
            try await collection.delete(document: try #require(try await collection.document(id: "f2")))
            _ = await runToCompletion(replicator)
            #expect(deletedSeen.withLock { $0 })
            #expect(try await target.document(id: "f2") == nil)

            var byID = CollectionConfiguration()
            byID.documentIDs = ["f1", "f3"]
            _ = await runToCompletion(try Replicator(config: try makeConfig(local, endpoint, .push, byID)))
            #expect(try await target.document(id: "f1") != nil)
            #expect(try await target.document(id: "f5") == nil)

            var pulling = CollectionConfiguration()
            let pulledFlags = Locked<[String: DocumentFlags]>([:])
            pulling.pullFilter = { document, flags in
                pulledFlags.withLock { $0[document.id] = flags }
                return document.id != "r1"
            }
            try await saveDocuments(4, prefix: "r", in: target)
            _ = await runToCompletion(try Replicator(config: try makeConfig(local, endpoint, .pull, pulling)))
            #expect(try await collection.document(id: "r0") != nil)
            #expect(try await collection.document(id: "r1") == nil)
            // A remote deletion reaches the pull filter with the .deleted flag.
            try await target.delete(document: try #require(try await target.document(id: "r0")))
            _ = await runToCompletion(try Replicator(config: try makeConfig(local, endpoint, .pull, pulling)))
            #expect(pulledFlags.withLock { $0["r0"] } == .deleted)
            #expect(try await collection.document(id: "r0") == nil)

            // Pulling by document ids (over HTTP, a `_changes` request with a doc_ids filter).
            var pullByID = CollectionConfiguration()
            pullByID.documentIDs = ["r1", "r3"]
            try await target.save(document: MutableDocument(id: "r9"))
            let byIDPull = try #require(
                await runToCompletion(try Replicator(config: try makeConfig(local, endpoint, .pull, pullByID))).last)
            #expect(byIDPull.error == nil && byIDPull.progress.total == 2)
            #expect(try await collection.document(id: "r1") != nil)
            #expect(try await collection.document(id: "r9") == nil)
        }
    }

    @Test(arguments: Transport.allCases)
    func pendingDocumentsFollowThePushCheckpoint(over transport: Transport) async throws {
        try await withTwoDatabases(over: transport) { local, remote, endpoint in
            let collection = try local.defaultCollection()
            try await saveDocuments(3, prefix: "q", in: collection)
            let replicator = try Replicator(config: try makeConfig(local, endpoint, .push))
            #expect(try await replicator.pendingDocumentIDs(for: collection) == ["q0", "q1", "q2"])
            #expect(try await replicator.isDocumentPending("q1", collection: collection))
            _ = await runToCompletion(replicator)
            #expect(try await replicator.pendingDocumentIDs(for: collection).isEmpty)
            try await collection.save(document: MutableDocument(id: "q9"))
            #expect(try await replicator.pendingDocumentIDs(for: collection) == ["q9"])
            #expect(try await !replicator.isDocumentPending("q0", collection: collection))

            let puller = try Replicator(config: try makeConfig(local, endpoint, .pull))
            await expectCouchetteError(.unsupported) { _ = try await puller.pendingDocumentIDs(for: collection) }
            await expectCouchetteError(.invalidParameter) { _ = try await replicator.pendingDocumentIDs(for: remote.defaultCollection()) }
        }
    }

    @Test func transientFailuresGoOfflineThenComplete() async throws {
        try await withTwoDatabases { local, remote in
            try await saveDocuments(5, prefix: "o", in: try local.defaultCollection())
            let probe = PeerProbe { name, call in name == "bulkDocs" && call == 1 ? CouchetteError(.io, "connection reset") : nil }
            var config = try makeConfig(local, remote, .push)
            config.maxAttemptWaitTime = 0.05
            let replicator = try Replicator(config: config, wrap: probe.wrap)
            let statuses = await runToCompletion(replicator)
            #expect(statuses.contains { $0.activity == .offline && ($0.error as? CouchetteError)?.code == .io })
            #expect(statuses.last?.error == nil)
            #expect(try await remote.defaultCollection().count == 5)
        }
    }

    @Test func refusedCredentialsAndExhaustedAttemptsStopWithTheError() async throws {
        try await withTwoDatabases { local, remote in
            try await saveDocuments(2, prefix: "u", in: try local.defaultCollection())
            let refusing = PeerProbe { name, _ in name == "bulkGet" ? CouchetteError(.unauthorized, "401 from server") : nil }
            let replicator = try Replicator(config: try makeConfig(local, remote, .push), wrap: refusing.wrap)
            let statuses = await runToCompletion(replicator)
            #expect(!statuses.contains { $0.activity == .offline })
            #expect((statuses.last?.error as? CouchetteError)?.code == .unauthorized)

            let failing = PeerProbe { name, _ in name == "bulkGet" ? CouchetteError(.io, "down") : nil }
            var config = try makeConfig(local, remote, .push)
            config.maxAttempts = 3
            config.maxAttemptWaitTime = 0.01
            let giving = try Replicator(config: config, wrap: failing.wrap)
            #expect((await runToCompletion(giving).last?.error as? CouchetteError)?.code == .io)
            #expect(failing.counts.withLock { $0.bulkGetCalls } == 3)
        }
    }

    @Test func badConfigurationsFailClearly() async throws {
        try await withTwoDatabases { local, remote in
            await expectCouchetteError(.invalidParameter) {
                _ = try Replicator(config: ReplicatorConfiguration(target: DatabaseEndpoint(database: remote)))
            }
            var same = ReplicatorConfiguration(target: DatabaseEndpoint(database: local))
            same.addCollection(try local.defaultCollection())
            await expectCouchetteError(.invalidParameter) { _ = try Replicator(config: same) }
            var ftp = ReplicatorConfiguration(target: URLEndpoint(url: URL(string: "ftp://host/db")!))
            ftp.addCollection(try local.defaultCollection())
            await expectCouchetteError(.invalidParameter) { _ = try Replicator(config: ftp) }
            var negative = try makeConfig(local, remote)
            negative.maxAttemptWaitTime = -1
            await expectCouchetteError(.invalidParameter) { _ = try Replicator(config: negative) }
            var notANumber = try makeConfig(local, remote)
            notANumber.heartbeat = .nan
            await expectCouchetteError(.invalidParameter) { _ = try Replicator(config: notANumber) }
        }
    }

    @Test func closingTheDatabaseStopsAContinuousReplicator() async throws {
        let directory = try TemporaryDirectory()
        let local = try directory.open("local")
        let remote = try directory.open("remote")
        var config = try makeConfig(local, remote)
        config.continuous = true
        let replicator = try Replicator(config: config)
        await replicator.start()
        #expect(await eventually(timeout: .seconds(30)) { await replicator.status.activity == .idle })
        try await local.close()
        #expect(await eventually(timeout: .seconds(30)) { await replicator.status.activity == .stopped })
        try await remote.close()
    }

    @Test func startRightAfterStopRunsAgain() async throws {
        try await withTwoDatabases { local, remote in
            var config = try makeConfig(local, remote, .push)
            config.continuous = true
            let replicator = try Replicator(config: config)
            await replicator.start()
            await replicator.stop()
            await replicator.start()
            try await local.defaultCollection().save(document: MutableDocument(id: "after-restart"))
            #expect(
                await eventually(timeout: .seconds(30)) { (try? await remote.defaultCollection().document(id: "after-restart")) != nil })
            #expect(await replicator.status.activity != .stopped)
            await replicator.stop()
            #expect(await eventually(timeout: .seconds(30)) { await replicator.status.activity == .stopped })
        }
    }

    /// Fails every fetch of one document, as a server answers `_bulk_get` with a per-document error.
    struct OneMissingPeer: ForwardingPeer {
        let base: any ReplicationPeer
        let missing: String
        func bulkGet(_ requests: [RevisionRequest]) async throws -> [RevisionFetch] {
            try await base.bulkGet(requests).map { fetch in
                if case .found(let revision) = fetch, revision.id == missing {
                    return .failed(id: revision.id, revisionID: revision.revisionID, error: CouchetteError(.http(status: 403), "forbidden"))
                }
                return fetch
            }
        }
    }

    /// Edits a document of the source right before the first fetch: the revision `_changes`
    /// listed is superseded (and its body gone) by the time it is asked for.
    struct EditingBeforeFetchPeer: ForwardingPeer {
        let base: any ReplicationPeer
        let source: Couchette.Collection
        let id: String
        let done = Locked(false)
        func bulkGet(_ requests: [RevisionRequest]) async throws -> [RevisionFetch] {
            if done.withLock({
                let first = !$0; $0 = true; return first
            }) {
                let doc = try #require(await source.document(id: id)).toMutable().setString("newer", forKey: "state")
                try await source.save(document: doc)
            }
            return try await base.bulkGet(requests)
        }
    }

    @Test func aRevisionSupersededBeforeItsFetchIsFetchedWithLatest() async throws {
        try await withTwoDatabases { local, remote in
            try await saveDocuments(3, prefix: "x", in: try remote.defaultCollection())
            let source = try remote.defaultCollection()
            let replicator = try Replicator(config: try makeConfig(local, remote, .pull)) {
                EditingBeforeFetchPeer(base: $0, source: source, id: "x1")
            }
            let events = replicator.documentReplications()
            #expect(await runToCompletion(replicator).last?.error == nil)
            let event = try #require(await events.next(timeout: .seconds(10)))
            #expect(
                event.documents.allSatisfy { $0.error == nil }, "\(event.documents.map { "\($0.id): \(String(describing: $0.error))" })")
            #expect(try await local.defaultCollection().document(id: "x1")?.string(forKey: "state") == "newer")
            #expect(try currentRevisions(local.defaultCollection()) == currentRevisions(remote.defaultCollection()))
        }
    }

    @Test func overHTTPASupersededRevisionIsFetchedWithLatest() async throws {
        try await withTwoDatabases { local, remote in
            try await saveDocuments(3, prefix: "h", in: try remote.defaultCollection())
            let source = try remote.defaultCollection()
            try await withListener([source]) { _, base in
                var config = ReplicatorConfiguration(target: URLEndpoint(url: URL(string: base + "/" + remote.name)!))
                config.addCollection(try local.defaultCollection())
                config.replicatorType = .pull
                let replicator = try Replicator(config: config) { EditingBeforeFetchPeer(base: $0, source: source, id: "h2") }
                #expect(await runToCompletion(replicator).last?.error == nil)
                #expect(try await local.defaultCollection().document(id: "h2")?.string(forKey: "state") == "newer")
                #expect(try currentRevisions(local.defaultCollection()) == currentRevisions(remote.defaultCollection()))
            }
        }
    }

    /// Fails one document's fetch with a server error, once.
    struct OnceFailingFetchPeer: ForwardingPeer {
        let base: any ReplicationPeer
        let id: String
        let failed = Locked(false)
        func bulkGet(_ requests: [RevisionRequest]) async throws -> [RevisionFetch] {
            try await base.bulkGet(requests).map { fetch in
                if case .found(let revision) = fetch, revision.id == id,
                    failed.withLock({
                        let first = !$0; $0 = true; return first
                    })
                {
                    return .failed(id: id, revisionID: revision.revisionID, error: CouchetteError(.http(status: 500), "internal"))
                }
                return fetch
            }
        }
    }

    @Test func aTransientFetchFailureRetriesTheBatchInsteadOfSkippingTheDocument() async throws {
        try await withTwoDatabases { local, remote in
            try await saveDocuments(3, prefix: "t", in: try remote.defaultCollection())
            var config = try makeConfig(local, remote, .pull)
            config.maxAttemptWaitTime = 0
            let replicator = try Replicator(config: config) { OnceFailingFetchPeer(base: $0, id: "t1") }
            let statuses = await runToCompletion(replicator)
            #expect(statuses.last?.error == nil)
            #expect(statuses.contains { $0.activity == .offline })
            #expect(try await local.defaultCollection().count == 3)
            // Nothing was checkpointed past t1: a second run has nothing left to fetch.
            #expect(try currentRevisions(local.defaultCollection()) == currentRevisions(remote.defaultCollection()))
        }
    }

    @Test func perDocumentErrorsAreReportedAndTheRestReplicates() async throws {
        try await withTwoDatabases { local, remote in
            try await saveDocuments(3, prefix: "e", in: try remote.defaultCollection())
            let replicator = try Replicator(config: try makeConfig(local, remote, .pull)) { OneMissingPeer(base: $0, missing: "e1") }
            let events = replicator.documentReplications()
            #expect(await runToCompletion(replicator).last?.error == nil)
            let event = try #require(await events.next(timeout: .seconds(10)))
            #expect(!event.isPush)
            let failed = try #require(event.documents.first { $0.id == "e1" })
            #expect((failed.error as? CouchetteError)?.code == .http(status: 403))
            #expect(event.documents.filter { $0.error == nil }.map(\.id).sorted() == ["e0", "e2"])
            #expect(try await local.defaultCollection().count == 2)
        }
    }

    @Test func pulledDocumentsUpdateLiveQueries() async throws {
        try await withTwoDatabases { local, remote in
            let query = try local.createQuery("SELECT COUNT(*) AS n FROM _default")
            let results = query.changes()
            _ = await results.next(timeout: .seconds(10))  // the initial results
            try await saveDocuments(5, prefix: "lq", in: try remote.defaultCollection())
            _ = await runToCompletion(try Replicator(config: try makeConfig(local, remote, .pull)))
            var count = -1
            while count != 5, let change = await results.next(timeout: .seconds(10)) {
                var rows = change.results?.makeIterator()
                count = rows?.next()?.int(forKey: "n") ?? -1
            }
            #expect(count == 5)
        }
    }

    @Test func severalCollectionsReplicateTogether() async throws {
        try await withTwoDatabases { local, remote in
            let notes = try await local.createCollection(name: "notes")
            try await saveDocuments(3, prefix: "d", in: try local.defaultCollection())
            try await saveDocuments(4, prefix: "n", in: notes)
            let remoteNotes = try await remote.createCollection(name: "notes")
            try await saveDocuments(2, prefix: "rn", in: remoteNotes)
            var config = ReplicatorConfiguration(target: DatabaseEndpoint(database: remote))
            config.addCollection(try local.defaultCollection())
            config.addCollection(notes)
            let last = try #require(await runToCompletion(try Replicator(config: config)).last)
            #expect(last.error == nil)
            #expect(try await remote.defaultCollection().count == 3)
            #expect(try await remoteNotes.count == 6)
            #expect(try await notes.count == 6)
            #expect(try await local.defaultCollection().count == 3)
        }
    }

    @Test func namedCollectionsReplicateToTheSameNameOrRemoteName() async throws {
        try await withTwoDatabases { local, remote in
            let tasks = try await local.createCollection(name: "tasks", scope: "work")
            try await saveDocuments(2, prefix: "t", in: tasks)
            var config = ReplicatorConfiguration(target: DatabaseEndpoint(database: remote))
            config.addCollection(tasks)
            config.replicatorType = .push
            _ = await runToCompletion(try Replicator(config: config))
            #expect(try await remote.collection(name: "tasks", scope: "work")?.count == 2)
            var renamed = CollectionConfiguration()
            renamed.remoteName = "archive"
            config.addCollection(tasks, config: renamed)
            _ = await runToCompletion(try Replicator(config: config))
            #expect(try await remote.collection(name: "archive")?.count == 2)
        }
    }
}
