import Foundation

/// One direction of one collection's replication: the CouchDB replication loop.
///
/// `_changes` (style=all_docs) → `_revs_diff` → `_bulk_get` → filter → `_bulk_docs`
/// (new_edits=false) → after a pull, conflict resolution → checkpoint on both sides. One-shot
/// runs stop once a page comes back short; continuous ones long-poll the source when caught up.
struct ReplicationWorker: Sendable {
    let link: ReplicationLink
    let isPush: Bool
    let number: Int
    let replicator: Replicator
    let replicationID: String

    var source: any ReplicationPeer { isPush ? link.local : link.remote }
    var target: any ReplicationPeer { isPush ? link.remote : link.local }
    var config: ReplicatorConfiguration { replicator.config }
    var state: ReplicatorState { replicator.state }
    var filter: ReplicationFilter? { isPush ? link.config.pushFilter : link.config.pullFilter }

    init(link: ReplicationLink, isPush: Bool, number: Int, replicator: Replicator) throws {
        self.link = link
        self.isPush = isPush
        self.number = number
        self.replicator = replicator
        replicationID = Checkpoint.replicationID(
            localUUID: try link.collection.reader.uuid(), collection: link.collection.fullName,
            remote: link.remote.identifier, isPush: isPush, documentIDs: link.config.documentIDs,
            hasFilter: (isPush ? link.config.pushFilter : link.config.pullFilter) != nil,
            selector: isPush ? nil : link.pullSelector?.source)
    }

    /// Where the worker is, kept across retries of one run.
    private struct Cursor {
        var isLoaded = false
        var since: Value?
        var sourceCheckpoint: Value?
        var targetCheckpoint: Value?
        var session = Checkpoint.Session(startSequence: nil)
        var failedAttempts: UInt = 0
    }

    /// Runs until done (one-shot), cancelled, or failed beyond the allowed attempts.
    func run(reset: Bool) async throws {
        var cursor = Cursor()
        defer {
            source.closeStreams()
            state.workerFinished(replicator, worker: number)
        }
        while true {
            do {
                try await runOnce(reset: reset, cursor: &cursor)
                return
            } catch {
                if error is CancellationError || Task.isCancelled { throw CancellationError() }
                cursor.failedAttempts += 1
                guard Self.isTransient(error), cursor.failedAttempts < config.effectiveMaxAttempts else { throw error }
                state.setActivity(replicator, worker: number, .offline, error: error)
                // Doubling from one second, capped (also at a day, which Duration always holds);
                // cut short when an unreachable server answers a probe again.
                let wait = min(pow(2, Double(min(cursor.failedAttempts, 64) - 1)), config.maxAttemptWaitTime, 86_400)
                try await link.remote.awaitRetry(within: .seconds(max(0, wait)))
            }
        }
    }

    /// Network trouble, busy servers and a full local database (room may be made) are retried;
    /// refused credentials, missing databases and bad data are not.
    static func isTransient(_ error: any Error) -> Bool {
        guard let error = error as? CouchetteError else { return true }
        switch error.code {
        case .io, .busy, .conflict, .full: return true
        case .http(let status): return status >= 500 || status == 408 || status == 429
        default: return false
        }
    }

    private func runOnce(reset: Bool, cursor: inout Cursor) async throws {
        state.setActivity(replicator, worker: number, .connecting)
        _ = try await source.info()
        _ = try await target.info()
        if !cursor.isLoaded {
            cursor.sourceCheckpoint = try await source.localDocument(id: replicationID)
            cursor.targetCheckpoint = try await target.localDocument(id: replicationID)
            cursor.since = reset ? nil : Checkpoint.resumeSequence(source: cursor.sourceCheckpoint, target: cursor.targetCheckpoint)
            cursor.session = Checkpoint.Session(startSequence: cursor.since)
            cursor.isLoaded = true
        }
        var page = try await nextPage(since: cursor.since, caughtUp: false)
        while true {
            try Task.checkCancellation()
            if page.results.isEmpty {
                if page.lastSequence != cursor.since {
                    cursor.since = page.lastSequence
                    try await saveCheckpoint(&cursor)
                }
                if !config.continuous { return }
                page = try await nextPage(since: cursor.since, caughtUp: true)
                continue
            }
            state.setActivity(replicator, worker: number, .busy)
            // A full page means more is waiting: read the next page while this one is moved.
            let isFull = page.results.count >= replicator.options.batchSize
            let following = page.lastSequence
            async let upcoming = isFull ? nextPage(since: following, caughtUp: false) as PeerChanges? : nil
            try await transfer(page.results, session: &cursor.session)
            cursor.since = page.lastSequence
            try await saveCheckpoint(&cursor)
            cursor.failedAttempts = 0
            if let next = try await upcoming {
                page = next
            } else if config.continuous {
                page = try await nextPage(since: cursor.since, caughtUp: true)
            } else {
                return
            }
        }
    }

    /// The next page of changes; once caught up, a long poll (the worker shows `.idle` meanwhile).
    private func nextPage(since: Value?, caughtUp: Bool) async throws -> PeerChanges {
        if caughtUp { state.setActivity(replicator, worker: number, .idle) }
        let wait: ChangesWait = caughtUp ? .longpoll(timeout: .seconds(min(max(config.heartbeat, 1), 60))) : .normal
        return try await source.changes(
            since: since, limit: replicator.options.batchSize, documentIDs: link.config.documentIDs,
            selector: isPush ? nil : link.pullSelector, wait: wait)
    }

    /// Moves the revisions of one page of changes that the target lacks.
    private func transfer(_ changes: [PeerChange], session: inout Checkpoint.Session) async throws {
        var leaves: [String: [String]] = [:]
        for change in changes { leaves[change.id, default: []].append(contentsOf: change.leafRevisions) }
        let diff = try await target.revsDiff(leaves)
        var requests: [RevisionRequest] = []
        var seen = Set<String>()
        for change in changes where seen.insert(change.id).inserted {
            guard let missing = diff[change.id] else { continue }
            for revision in missing.missing {
                requests.append(RevisionRequest(id: change.id, revisionID: revision, knownAncestors: missing.possibleAncestors))
            }
        }
        session.missingChecked += leaves.values.reduce(0) { $0 + $1.count }
        session.missingFound += requests.count
        state.addProgress(replicator, completed: 0, total: changes.count)
        var events: [ReplicatedDocument] = []
        var accepted: [PeerRevision] = []
        if !requests.isEmpty {
            for fetch in try await fetch(requests) {
                switch fetch {
                case .found(let revision):
                    session.documentsRead += 1
                    if try passes(revision) { accepted.append(revision) }
                case .failed(let id, _, let error):
                    session.writeFailures += 1
                    events.append(event(id, flags: [], error: error))
                }
            }
        }
        var failures: [String: CouchetteError] = [:]
        if !accepted.isEmpty {
            for failure in try await target.bulkDocs(accepted) { failures[failure.id] = failure.error }
        }
        session.documentsWritten += accepted.count - failures.count
        session.writeFailures += failures.count
        for revision in accepted {
            events.append(event(revision.id, flags: revision.deleted ? .deleted : [], error: failures[revision.id]))
        }
        if !isPush {
            // Every document of the page, not only those written now: a retried batch whose
            // revisions were written before the failure must still get its conflicts resolved.
            var pulled: [String: Set<String>] = [:]
            for change in changes { pulled[change.id, default: []].formUnion(change.leafRevisions) }
            try await ConflictResolver(collection: link.collection, resolver: link.config.conflictResolver).resolve(pulled)
        }
        state.addProgress(replicator, completed: changes.count, total: 0)
        if !events.isEmpty {
            state.publish(DocumentReplication(replicator: replicator, isPush: isPush, documents: events))
        }
    }

    /// Fetches the missing revisions. A revision superseded since `_changes` listed it comes back
    /// missing: it is asked again with `latest` (the protocol's answer to that race), which
    /// returns the leaves that replaced it. A revision still failing for a transient reason
    /// (server error) fails the whole batch, so the checkpoint does not move past it and the
    /// retry fetches it again; a document refused for good (forbidden, purged) is reported and
    /// skipped, as CouchDB counts a write failure.
    private func fetch(_ requests: [RevisionRequest]) async throws -> [RevisionFetch] {
        var fetched = try await source.bulkGet(requests)
        let superseded = fetched.compactMap { fetch -> RevisionRequest? in
            guard case .failed(let id, let revisionID, let error) = fetch, error.code == .notFound else { return nil }
            let known = requests.first { $0.id == id && $0.revisionID == revisionID }?.knownAncestors ?? []
            return RevisionRequest(id: id, revisionID: revisionID, knownAncestors: known, latest: true)
        }
        if !superseded.isEmpty {
            fetched.removeAll { if case .failed(_, _, let error) = $0 { error.code == .notFound } else { false } }
            fetched += try await source.bulkGet(superseded)
        }
        for case .failed(let id, let revisionID, let error) in fetched where Self.isTransient(error) {
            throw CouchetteError(.io, "could not fetch revision \(revisionID) of '\(id)' from \(source.identifier): \(error.message)")
        }
        return fetched
    }

    private func passes(_ revision: PeerRevision) throws -> Bool {
        guard let filter else { return true }
        let body = revision.deleted ? Document.emptyBody : try ValueEncoder.encode(revision.body)
        let document = Document(id: revision.id, revisionID: revision.revisionID, sequence: 0, isDeleted: revision.deleted, body: body)
        return filter(document, revision.deleted ? .deleted : [])
    }

    private func event(_ id: String, flags: DocumentFlags, error: (any Error)?) -> ReplicatedDocument {
        ReplicatedDocument(id: id, scope: link.collection.scope.name, collection: link.collection.name, flags: flags, error: error)
    }

    /// Makes the target's writes durable (`_ensure_full_commit`), then records `cursor.since` on
    /// the source and on the target, the protocol's "Ensure In Commit" and "Record Replication
    /// Checkpoint" steps in their order.
    private func saveCheckpoint(_ cursor: inout Cursor) async throws {
        guard let since = cursor.since else { return }
        try await target.ensureFullCommit()
        let sourceDocument = Checkpoint.document(previous: cursor.sourceCheckpoint, session: cursor.session, sequence: since)
        try await source.putLocalDocument(id: replicationID, sourceDocument)
        cursor.sourceCheckpoint = sourceDocument
        let targetDocument = Checkpoint.document(previous: cursor.targetCheckpoint, session: cursor.session, sequence: since)
        try await target.putLocalDocument(id: replicationID, targetDocument)
        cursor.targetCheckpoint = targetDocument
    }
}
