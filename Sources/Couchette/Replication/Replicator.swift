import Foundation

/// Replicates collections with a ``URLEndpoint`` server or another database (``DatabaseEndpoint``)
/// over CouchDB's replication protocol.
///
/// ```swift
/// var config = ReplicatorConfiguration(target: DatabaseEndpoint(database: backup))
/// config.addCollection(try db.defaultCollection())
/// let replicator = try Replicator(config: config)
/// let changes = replicator.changes()            // the current status first, then every change
/// await replicator.start()
/// for await change in changes where change.status.activity == .stopped {
///     if let error = change.status.error { print("failed: \(error)") }
///     break
/// }
/// ```
///
/// A one-shot replication goes `.connecting` → `.busy` → `.stopped`; a continuous one settles at
/// `.idle` between changes. Checkpoints (`_local` documents on both sides) let a later run resume
/// where this one stopped; `start(reset: true)` starts over. Network failures are retried with
/// exponential backoff (status `.offline` meanwhile) up to
/// ``ReplicatorConfiguration/maxAttempts``; refused credentials stop at once with
/// `.unauthorized`. Closing a replicated database stops the replicator.
public actor Replicator {
    /// What a replicator is doing; ordered from least to most active.
    public enum ActivityLevel: Sendable, Comparable {
        /// Not running: never started, finished a one-shot run, stopped, or failed (see
        /// ``Status/error``).
        case stopped
        /// Waiting to retry after a network failure, with backoff; the server is probed so its
        /// return is noticed at once.
        case offline
        /// Starting: reaching the peer and reading checkpoints.
        case connecting
        /// Caught up: a continuous replicator waits for new changes on either side.
        case idle
        /// Moving changes.
        case busy
    }

    /// Changes processed (`completed`) out of changes seen so far (`total`) in this run.
    public struct Progress: Sendable, Equatable {
        /// Changes fully processed: fetched if needed, written and, after a pull, conflicts
        /// resolved.
        public let completed: UInt64
        /// Changes read from the sources' change feeds so far; grows as a run finds more.
        public let total: UInt64
    }

    /// A snapshot of what the replicator is doing, as ``Replicator/status`` and
    /// ``Replicator/changes()`` report it.
    ///
    /// ```swift
    /// let status = await replicator.status
    /// print(status.activity, "\(status.progress.completed)/\(status.progress.total)")
    /// ```
    public struct Status: Sendable {
        /// The activity of the busiest direction and collection (busy before connecting, before
        /// offline, before idle).
        public let activity: ActivityLevel
        /// Progress of the current or last run.
        public let progress: Progress
        /// The failure that stopped the replicator, or the one it is retrying while `.offline`.
        public let error: (any Error)?
        /// The server of a ``URLEndpoint`` in use: the one of ``URLEndpoint/urls`` (without
        /// user and password) that answered last in this run; it changes when the replicator
        /// fails over to another server. Nil until a server answered, and for a
        /// ``DatabaseEndpoint``.
        ///
        /// ```swift
        /// for await change in replicator.changes() {
        ///     print(change.status.activity, change.status.serverURL?.absoluteString ?? "-")
        /// }
        /// ```
        public let serverURL: URL?

        init(activity: ActivityLevel, progress: Progress, error: (any Error)?, serverURL: URL? = nil) {
            self.activity = activity
            self.progress = progress
            self.error = error
            self.serverURL = serverURL
        }
    }

    /// The configuration this replicator was created with.
    public nonisolated let config: ReplicatorConfiguration
    nonisolated let state = ReplicatorState()
    /// The servers of a ``URLEndpoint`` and the one in use; nil for a ``DatabaseEndpoint``.
    nonisolated let servers: ServerSelection?
    /// Tuning kept out of the public configuration (``ReplicationOptions``).
    nonisolated let options: ReplicationOptions
    /// Where the peers come from (``EndpointPeers`` outside tests).
    private nonisolated let peers: any ReplicationPeerFactory
    private var run: Task<Void, Never>?
    private var isStopping = false
    private var generation = 0
    private var links: [ReplicationLink]?
    /// Close observers on the replicated databases: closing one stops the replicator.
    private nonisolated let closeRegistrations = Locked<[(observers: CommitObservers, token: Int)]>([])

    /// - Throws: `.invalidParameter` without collections, with collections of several databases,
    ///   with a ``DatabaseEndpoint`` naming the local database, a URL that is not http(s), remote
    ///   database names that are illegal or shared (see ``CollectionConfiguration/remoteName``),
    ///   a negative or non-finite `heartbeat` or `maxAttemptWaitTime`, or a `pullSelector` that is
    ///   not a valid Mango selector.
    public init(config: ReplicatorConfiguration) throws {
        try self.init(config: config, options: ReplicationOptions(), peers: EndpointPeers())
    }

    init(config: ReplicatorConfiguration, options: ReplicationOptions, peers: any ReplicationPeerFactory) throws {
        guard let first = config.collections.first else {
            throw CouchetteError(.invalidParameter, "replicator configuration has no collection: call addCollection first")
        }
        guard config.collections.allSatisfy({ $0.database === first.database }) else {
            throw CouchetteError(.invalidParameter, "replicated collections must all belong to one database")
        }
        for (name, value) in [("heartbeat", config.heartbeat), ("maxAttemptWaitTime", config.maxAttemptWaitTime)]
        where !value.isFinite || value < 0 {
            throw CouchetteError(.invalidParameter, "\(name) must be a finite number of seconds ≥ 0, not \(value)")
        }
        for collectionConfig in config.collectionConfigs {
            if case .failure(let error)? = collectionConfig.parsedPullSelector { throw error }
        }
        guard options.batchSize > 0 else {
            throw CouchetteError(.invalidParameter, "batch size must be positive, not \(options.batchSize)")
        }
        switch config.target {
        case let endpoint as DatabaseEndpoint:
            guard endpoint.database !== first.database, endpoint.database.path != first.database.path else {
                throw CouchetteError(.invalidParameter, "a database cannot replicate with itself ('\(first.database.name)')")
            }
        case let endpoint as URLEndpoint:
            guard !endpoint.urls.isEmpty else {
                throw CouchetteError(.invalidParameter, "URLEndpoint(urls:) was given no URL")
            }
            var names: [String]?
            for url in endpoint.urls {
                guard let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https" else {
                    throw CouchetteError(.invalidParameter, "replication URL '\(RemotePeer.redacted(url))' must use http or https")
                }
                let resolved = try RemoteDatabaseNames.resolve(url: url, collections: config.collections, configs: config.collectionConfigs)
                if let names, names != resolved {
                    throw CouchetteError(
                        .invalidParameter,
                        """
                        the URLs of one URLEndpoint must be servers of one database: '\(RemotePeer.redacted(url))' names \
                        '\(resolved[0])', '\(RemotePeer.redacted(endpoint.urls[0]))' names '\(names[0])'
                        """)
                }
                names = resolved
            }
        default:
            throw CouchetteError(.invalidParameter, "unsupported endpoint type \(type(of: config.target))")
        }
        self.config = config
        self.options = options
        self.peers = peers
        servers = (config.target as? URLEndpoint).map { ServerSelection(urls: $0.urls) }
        servers?.observe { [weak self] url in
            if let self { self.state.setServerURL(self, url) }
        }
        for database in databases {
            let token = database.observation.observers.add(
                nil,
                onClose: { [weak self] in
                    guard let self else { return }
                    Task { await self.stop() }
                })
            closeRegistrations.withLock { $0.append((database.observation.observers, token)) }
        }
    }

    deinit {
        run?.cancel()
        for registration in closeRegistrations.withLock({ $0 }) { registration.observers.remove(registration.token) }
        state.finishStreams()
    }

    /// The current status.
    public var status: Status { state.status }

    /// Starts replicating; does nothing when already running (a run being stopped is replaced
    /// once it has stopped). With `reset`, checkpoints are ignored and every document is compared
    /// again (revisions the other side has are not re-sent).
    public func start(reset: Bool = false) {
        if run != nil && !isStopping { return }
        let previous = run
        generation += 1
        let current = generation
        isStopping = false
        state.begin(self)
        run = Task.detached { [self] in
            await previous?.value
            servers?.restart()  // each run starts with the first server that answers
            let error = await self.execute(reset: reset, generation: current)
            await self.finished(error: error, generation: current)
        }
    }

    /// Stops replicating. The status becomes `.stopped` once the batch in flight is abandoned;
    /// the checkpoints keep what was completed.
    public func stop() {
        guard let run else { return }
        isStopping = true
        run.cancel()
    }

    private nonisolated var databases: [Database] {
        var result = [config.collections[0].database]
        if let endpoint = config.target as? DatabaseEndpoint { result.append(endpoint.database) }
        return result
    }

    private func finished(error: (any Error)?, generation finished: Int) {
        guard finished == generation else { return }  // a newer start() took over
        run = nil
        isStopping = false
        state.end(self, error: error)
    }

    /// Runs every worker (each collection, each direction); returns the error that stopped them.
    /// Worker numbers are unique across runs, so a run still winding down cannot touch the status
    /// entries of the next one.
    private nonisolated func execute(reset: Bool, generation: Int) async -> (any Error)? {
        do {
            let links = try await resolveLinks()
            var workers: [ReplicationWorker] = []
            for link in links {
                for isPush in [true, false] where isPush ? config.replicatorType.pushes : config.replicatorType.pulls {
                    workers.append(
                        try ReplicationWorker(link: link, isPush: isPush, number: generation << 16 | workers.count, replicator: self))
                }
            }
            try await withThrowingTaskGroup(of: Void.self) { group in
                for worker in workers {
                    group.addTask { try await worker.run(reset: reset) }
                }
                try await group.waitForAll()
            }
            return nil
        } catch is CancellationError {
            return nil
        } catch {
            return Task.isCancelled ? nil : error
        }
    }

    // MARK: - Peers

    /// The local and remote peers of every collection, made once.
    func resolveLinks() async throws -> [ReplicationLink] {
        if let links { return links }
        var made: [ReplicationLink] = []
        for (index, (collection, collectionConfig)) in zip(config.collections, config.collectionConfigs).enumerated() {
            let (local, remote) = try await peers.makePeers(for: collection, at: index, of: config, options: options, servers: servers)
            made.append(ReplicationLink(collection: collection, config: collectionConfig, local: local, remote: remote))
        }
        links = made
        return made
    }

    // MARK: - Streams

    /// The replicator's status: the current one at once, then every change, in order.
    ///
    /// ```swift
    /// for await change in replicator.changes() {
    ///     print(change.status.activity, change.status.progress.completed, "/", change.status.progress.total)
    /// }
    /// ```
    ///
    /// Subscribe at any time, before or after ``start(reset:)``. A consumer more than 64 events
    /// behind gets only the newest status. The stream ends when the replicator is deallocated.
    public nonisolated func changes() -> ChangeStream<ReplicatorChange> {
        state.statusStream(self)
    }

    /// The documents each batch pushed or pulled (one event per batch and direction), with
    /// `.deleted` flags and per-document errors. Documents refused by a filter are not reported.
    public nonisolated func documentReplications() -> ChangeStream<DocumentReplication> {
        state.documentStream()
    }

    // MARK: - Pending documents

    /// The ids of local documents changed since the last push checkpoint (and passing the
    /// collection's `documentIDs` and push filter): what a push would send next.
    ///
    /// - Throws: `.unsupported` for a pull-only replicator; `.invalidParameter` for a collection
    ///   the replicator does not replicate.
    public func pendingDocumentIDs(for collection: Collection) async throws -> Set<String> {
        guard config.replicatorType.pushes else {
            throw CouchetteError(.unsupported, "a pull-only replicator has no pending documents")
        }
        let links = try await resolveLinks()
        guard let link = links.first(where: { $0.collection == collection }) else {
            throw CouchetteError(.invalidParameter, "\(collection.fullName) is not replicated by this replicator")
        }
        let worker = try ReplicationWorker(link: link, isPush: true, number: 0, replicator: self)
        let checkpoint = try link.collection.localDocument(id: worker.replicationID)
        var since = try LocalPeer.sequence(checkpoint?["source_last_seq"])
        let ids = link.config.documentIDs.map(Set.init)
        var pending = Set<String>()
        while true {
            let page = try collection.replicationChanges(since: since, limit: 1000, documentIDs: ids)
            for change in page.changes where try passesPushFilter(change, link) { pending.insert(change.id) }
            if page.changes.count < 1000 || page.lastSequence == since { break }
            since = page.lastSequence
        }
        return pending
    }

    /// Whether `id` is among ``pendingDocumentIDs(for:)``.
    public func isDocumentPending(_ id: String, collection: Collection) async throws -> Bool {
        try await pendingDocumentIDs(for: collection).contains(id)
    }

    private func passesPushFilter(_ change: StoredChange, _ link: ReplicationLink) throws -> Bool {
        guard let filter = link.config.pushFilter else { return true }
        let collection = link.collection
        guard let document = try collection.storedDocument(id: change.id, includingDeleted: true) else { return false }
        return filter(document, document.isDeleted ? .deleted : [])
    }
}

/// One replicated collection: the local collection and its peers on both sides.
struct ReplicationLink: Sendable {
    let collection: Collection
    let config: CollectionConfiguration
    /// The local side (conflict resolution and checkpoints read ``collection`` directly).
    let local: any ReplicationPeer
    let remote: any ReplicationPeer

    /// The collection's pull selector (checked valid by `Replicator.init`).
    var pullSelector: MangoSelector? { try? config.parsedPullSelector?.get() }
}
