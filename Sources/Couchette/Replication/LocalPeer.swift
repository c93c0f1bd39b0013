/// A ``ReplicationPeer`` over one collection of an open database: the local side of every
/// replication, the other side of a ``DatabaseEndpoint``, and what the listener serves over HTTP.
///
/// Sequences are the collection's integer sequences (`Value.int`); string digits are accepted
/// too, since HTTP query strings carry them as text. Long polls wait on the collection's commit
/// observers, never on a timer loop.
struct LocalPeer: ReplicationPeer {
    let collection: Collection
    let identifier: String

    init(collection: Collection) throws {
        self.collection = collection
        identifier = "couchette:\(try collection.reader.uuid())/\(collection.fullName)"
    }

    func info() async throws -> PeerInfo {
        PeerInfo(name: collection.database.name, updateSequence: .int(Int64(clamping: try collection.lastSequence())))
    }

    /// Parses a sequence this peer handed out; nil means "from the start".
    static func sequence(_ value: Value?) throws -> UInt64 {
        switch value {
        case nil, .null?: return 0
        case .int(let number)? where number >= 0: return UInt64(number)
        case .string(let text)? where UInt64(text) != nil: return UInt64(text) ?? 0
        case .double(let number)? where number >= 0 && number < 1.8e19 && number.rounded() == number: return UInt64(number)
        case let other?:
            throw CouchetteError(.invalidParameter, "'\(JSON.string(from: other))' is not a Couchette sequence (a non-negative integer)")
        }
    }

    func changes(since: Value?, limit: Int, documentIDs: [String]?, selector: MangoSelector?, wait: ChangesWait) async throws -> PeerChanges
    {
        var start = try Self.sequence(since)
        let ids = documentIDs.map(Set.init)
        var page = try matchingChanges(since: start, limit: limit, documentIDs: ids, selector: selector)
        guard page.results.isEmpty, case .longpoll(let timeout) = wait else { return page }
        let deadline = ContinuousClock.now + timeout
        while page.results.isEmpty, ContinuousClock.now < deadline {
            // Subscribe first, then look again: a commit between the two reads is not missed.
            let feed = collection.changes()
            start = try Self.sequence(page.lastSequence)
            page = try matchingChanges(since: start, limit: limit, documentIDs: ids, selector: selector)
            if page.results.isEmpty {
                try await Self.waitForCommit(feed, timeout: deadline - ContinuousClock.now)
                page = try matchingChanges(since: start, limit: limit, documentIDs: ids, selector: selector)
            }
        }
        return page
    }

    /// Up to `limit` changes after `start`; with a selector, pages are read until `limit` rows
    /// match or the changes run out, so `lastSequence` passes the non-matching ones too.
    private func matchingChanges(
        since start: UInt64, limit: Int, documentIDs ids: Set<String>?,
        selector: MangoSelector?
    ) throws -> PeerChanges {
        var results: [PeerChange] = []
        var from = start
        while true {
            let wanted = limit - results.count
            let page = try collection.replicationChanges(since: from, limit: wanted, documentIDs: ids)
            for change in page.changes {
                if let selector, !(try matches(change.id, selector)) { continue }
                results.append(
                    PeerChange(
                        sequence: .int(Int64(clamping: change.sequence)), id: change.id,
                        leafRevisions: change.leafRevisions, deleted: change.isDeleted))
            }
            from = page.lastSequence
            if selector == nil || page.changes.count < wanted || results.count >= limit || page.changes.isEmpty {
                return PeerChanges(results: results, lastSequence: .int(Int64(clamping: page.lastSequence)))
            }
        }
    }

    /// Whether the current revision of a changed document matches `selector`.
    private func matches(_ id: String, _ selector: MangoSelector) throws -> Bool {
        let state = try collection.storedState(id: id)
        let document = MangoSelector.document(
            id: id, revisionID: state.revisionID, deleted: state.document == nil,
            body: state.document?.root.decode())
        return selector.matches(document)
    }

    /// Returns at the next commit to the collection, at the timeout, when the database closes, or
    /// (throwing `CancellationError`) when the task is cancelled.
    private static func waitForCommit(_ feed: ChangeStream<CollectionChange>, timeout: Duration) async throws {
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                var iterator = feed.makeAsyncIterator()
                _ = await iterator.next()
            }
            group.addTask { try? await Task.sleep(for: timeout) }
            await group.next()
            group.cancelAll()
        }
        try Task.checkCancellation()
    }

    func revsDiff(_ revisions: [String: [String]]) async throws -> [String: RevsDiffResult] {
        try collection.missingRevisions(revisions).mapValues {
            RevsDiffResult(missing: $0.missing, possibleAncestors: $0.possibleAncestors)
        }
    }

    func bulkGet(_ requests: [RevisionRequest]) async throws -> [RevisionFetch] {
        try await bulkGetGrouped(requests).flatMap { $0 }
    }

    /// ``bulkGet(_:)`` with the fetches of each request kept together (`_bulk_get` answers one
    /// result per requested document, with every leaf a `latest` request found).
    func bulkGetGrouped(_ requests: [RevisionRequest]) async throws -> [[RevisionFetch]] {
        let expanded = try requests.map { request -> [RevisionRequest] in
            guard request.latest else { return [request] }
            return try collection.latestLeaves(id: request.id, from: request.revisionID).map {
                RevisionRequest(id: request.id, revisionID: $0, knownAncestors: request.knownAncestors)
            }
        }
        var stored = try collection.storedRevisions(expanded.flatMap { $0 }.map { ($0.id, $0.revisionID) })[...]
        return expanded.map { group in
            group.map { request in
                fetched(request, stored.popFirst() ?? nil)
            }
        }
    }

    private func fetched(_ request: RevisionRequest, _ revision: StoredRevision?) -> RevisionFetch {
        guard let revision else {
            return .failed(
                id: request.id, revisionID: request.revisionID,
                error: CouchetteError(
                    .notFound, "revision \(request.revisionID) of document '\(request.id)' not found in \(collection.fullName)"))
        }
        var history = revision.history
        let known = Set(request.knownAncestors)
        if let cut = history.firstIndex(where: known.contains) { history.removeSubrange((cut + 1)...) }
        var fetched = PeerRevision(
            id: request.id, revisionID: request.revisionID, deleted: revision.isDeleted,
            body: revision.isDeleted ? .dictionary([:]) : EncodedValue(bytes: revision.body).decode(),
            history: history)
        if !revision.isDeleted { fetched.attachments = contentToSend(revision.body, request) }
        return .found(fetched)
    }

    /// The blob content a fetch carries: what the requester may lack. CouchDB's rule: content
    /// introduced after the newest revision the requester has (`atts_since`, its `revpos`
    /// compared with that generation) travels; older content goes as a stub.
    private func contentToSend(_ body: [UInt8], _ request: RevisionRequest) -> [String: AttachmentContent] {
        let references = BlobSearch.references(in: EncodedValue(bytes: body))
        guard !references.isEmpty else { return [:] }
        let known = Int64(request.knownAncestors.compactMap(RevisionID.generation(of:)).max() ?? 0)
        let generation = Int64(RevisionID.generation(of: request.revisionID) ?? 1)
        let store = collection.reader.blobs
        var contents: [String: AttachmentContent] = [:]
        for reference in references where (reference.revisionPosition ?? generation) > known {
            if store.contains(reference.digest), let path = store.path(for: reference.digest) {
                contents[reference.digest] = .file(path: path)
            }
        }
        return contents
    }

    /// Stores the content that came with each revision first (verified against its digest), and
    /// refuses a revision whose body references content this database does not have (a stub
    /// for something it never received: CouchDB's `missing_stub`).
    func bulkDocs(_ revisions: [PeerRevision]) async throws -> [DocumentWriteError] {
        var errors: [DocumentWriteError] = []
        var grafts: [GraftedRevision] = []
        grafts.reserveCapacity(revisions.count)
        let store = collection.reader.blobs
        var held: [String] = []
        defer { store.release(held) }
        for revision in revisions {
            do {
                let graft = try graftable(revision)
                if !revision.deleted { held += try installContent(of: revision, body: graft.body, into: store) }
                grafts.append(graft)
            } catch {
                errors.append(
                    DocumentWriteError(
                        id: revision.id, revisionID: revision.revisionID,
                        error: error as? CouchetteError
                            ?? CouchetteError(.invalidParameter, "\(error)")))
            }
        }
        _ = try await collection.graft(grafts)
        return errors
    }

    /// Writes `revision`'s travelling content and checks that every blob its body references is
    /// stored; returns the digests, held against compaction until the graft commits.
    private func installContent(of revision: PeerRevision, body: [UInt8], into store: BlobStore) throws -> [String] {
        var held: [String] = []
        do {
            let referenced = BlobSearch.references(in: EncodedValue(bytes: body))
            for (digest, content) in revision.attachments.sorted(by: { $0.key < $1.key }) {
                let reference = referenced.first { $0.digest == digest }
                do {
                    try content.install(into: store, digest: digest, contentType: reference?.contentType)
                } catch let error as CouchetteError where BlobWriter.isDigestMismatch(error) {
                    let name = reference.map { "\($0.isAttachment ? "attachment" : "blob") '\($0.path)'" } ?? "content"
                    throw CouchetteError(error.code, "document '\(revision.id)' revision \(revision.revisionID): \(name): \(error.message)")
                }
                held.append(digest)
            }
            store.hold(referenced.map(\.digest))
            held += referenced.map(\.digest)
            for reference in referenced where !store.contains(reference.digest) {
                throw CouchetteError(
                    .http(status: 412),
                    "document '\(revision.id)' revision \(revision.revisionID): the content of "
                        + "\(reference.isAttachment ? "attachment" : "blob") '\(reference.path)' (\(reference.digest)) was not sent and is not stored here"
                )
            }
        } catch {
            store.release(held)
            throw error
        }
        return held
    }

    private func graftable(_ revision: PeerRevision) throws -> GraftedRevision {
        try DocumentStore.validate(id: revision.id)
        guard revision.history.first == revision.revisionID else {
            throw CouchetteError(.invalidParameter, "history of '\(revision.id)' does not start with its revision \(revision.revisionID)")
        }
        try RevisionTree.validate(history: revision.history)
        guard case .dictionary = revision.body else {
            throw CouchetteError(.invalidParameter, "body of document '\(revision.id)' is not a JSON object")
        }
        let body = revision.deleted ? Document.emptyBody : try ValueEncoder.encode(revision.body)
        return GraftedRevision(
            id: revision.id, revisionID: revision.revisionID, isDeleted: revision.deleted,
            body: body, history: revision.history)
    }

    func localDocument(id: String) async throws -> Value? {
        try collection.localDocument(id: id)
    }

    func putLocalDocument(id: String, _ body: Value) async throws {
        try await collection.putLocalDocument(id: id, body)
    }

    /// Every commit is already durable (or as durable as the database's `fullSync` setting makes it).
    func ensureFullCommit() async throws {
        try collection.reader.checkUsable(collection.spec)
    }
}
