import Foundation
import Testing

@testable import Couchette

/// A peer that counts calls and can fail them on purpose, wrapped around a real one.
final class PeerProbe: Sendable {
    struct Counts {
        var bulkGetItems = 0
        var bulkGetCalls = 0
        var bulkDocsCalls = 0
    }

    let counts = Locked(Counts())
    /// Decides whether a call fails: gets the call name and its 1-based number for that name.
    let failure: @Sendable (String, Int) -> CouchetteError?

    init(failure: @escaping @Sendable (String, Int) -> CouchetteError? = { _, _ in nil }) {
        self.failure = failure
    }

    var bulkGetItems: Int { counts.withLock { $0.bulkGetItems } }

    func wrap(_ peer: any ReplicationPeer) -> any ReplicationPeer { ProbedPeer(base: peer, probe: self) }
}

/// A peer that hands every call to `base`: test wrappers implement only the calls they change.
protocol ForwardingPeer: ReplicationPeer {
    var base: any ReplicationPeer { get }
}

extension ForwardingPeer {
    var identifier: String { base.identifier }
    func info() async throws -> PeerInfo { try await base.info() }
    func changes(since: Value?, limit: Int, documentIDs: [String]?, selector: MangoSelector?, wait: ChangesWait) async throws -> PeerChanges
    {
        try await base.changes(since: since, limit: limit, documentIDs: documentIDs, selector: selector, wait: wait)
    }
    func revsDiff(_ revisions: [String: [String]]) async throws -> [String: RevsDiffResult] { try await base.revsDiff(revisions) }
    func bulkGet(_ requests: [RevisionRequest]) async throws -> [RevisionFetch] { try await base.bulkGet(requests) }
    func bulkDocs(_ revisions: [PeerRevision]) async throws -> [DocumentWriteError] { try await base.bulkDocs(revisions) }
    func localDocument(id: String) async throws -> Value? { try await base.localDocument(id: id) }
    func putLocalDocument(id: String, _ body: Value) async throws { try await base.putLocalDocument(id: id, body) }
    func ensureFullCommit() async throws { try await base.ensureFullCommit() }
    func closeStreams() { base.closeStreams() }
    func awaitRetry(within wait: Duration) async throws { try await base.awaitRetry(within: wait) }
}

struct ProbedPeer: ForwardingPeer {
    let base: any ReplicationPeer
    let probe: PeerProbe

    func bulkGet(_ requests: [RevisionRequest]) async throws -> [RevisionFetch] {
        let call = probe.counts.withLock { counts -> Int in
            counts.bulkGetCalls += 1
            return counts.bulkGetCalls
        }
        if let error = probe.failure("bulkGet", call) { throw error }
        probe.counts.withLock { $0.bulkGetItems += requests.count }
        return try await base.bulkGet(requests)
    }
    func bulkDocs(_ revisions: [PeerRevision]) async throws -> [DocumentWriteError] {
        let call = probe.counts.withLock { counts -> Int in
            counts.bulkDocsCalls += 1
            return counts.bulkDocsCalls
        }
        if let error = probe.failure("bulkDocs", call) { throw error }
        return try await base.bulkDocs(revisions)
    }
}

/// Two fresh databases in one temporary folder, closed afterwards.
nonisolated(nonsending) func withTwoDatabases(_ body: (Database, Database) async throws -> Void) async throws {
    let directory = try TemporaryDirectory()
    let local = try directory.open("local")
    let remote = try directory.open("remote")
    do {
        try await body(local, remote)
    } catch {
        try? await local.close()
        try? await remote.close()
        throw error
    }
    try await local.close()
    try await remote.close()
}

/// Starts `replicator` and returns every status until it stops again (the first element is the
/// status before the start).
func runToCompletion(_ replicator: Replicator, reset: Bool = false) async -> [Replicator.Status] {
    let changes = replicator.changes()
    await replicator.start(reset: reset)
    var statuses: [Replicator.Status] = []
    while let change = await changes.next(timeout: .seconds(30)) {
        statuses.append(change.status)
        if statuses.count > 1 && change.status.activity == .stopped { break }
    }
    return statuses
}

func makeConfig(
    _ local: Database, _ remote: Database, _ type: ReplicatorType = .pushAndPull,
    _ collectionConfig: CollectionConfiguration? = nil
) throws -> ReplicatorConfiguration {
    try makeConfig(local, DatabaseEndpoint(database: remote), type, collectionConfig)
}

/// Saves documents `prefix0 …` with a counter and some text.
func saveDocuments(_ count: Int, prefix: String, in collection: Collection) async throws {
    try await collection.database.inBatch { batch in
        for n in 0..<count {
            try batch.save(
                document: MutableDocument(id: "\(prefix)\(n)").setInt(n, forKey: "n").setString(prefix, forKey: "origin"),
                in: collection)
        }
    }
}

/// The revision tree of a document as comparable facts: revision, parent, and for leaves the
/// deleted flag (the protocol carries ancestors as bare ids, so an ancestor's flag is not shared).
func treeShape(_ collection: Collection, _ id: String) throws -> Set<String> {
    let tree = try collection.revisionTree(id: id)
    let leaves = Set(tree.leafIndices)
    return Set(
        tree.nodes.enumerated().map { position, node in
            let flag = leaves.contains(position) ? (node.isDeleted ? " deleted leaf" : " leaf") : ""
            return "\(node.revisionID)<\(node.parent.map { tree.nodes[$0].revisionID } ?? "root")\(flag)"
        })
}

/// Every document id with its current revision (tombstones included).
func currentRevisions(_ collection: Collection) throws -> [String: String] {
    var result: [String: String] = [:]
    var since: UInt64 = 0
    while true {
        let page = try collection.replicationChanges(since: since, limit: 1000, documentIDs: nil)
        for change in page.changes {
            result[change.id] = try collection.reader.read { try $0.record(collection.spec, change.id) }?.revisionID
        }
        if page.changes.count < 1000 { return result }
        since = page.lastSequence
    }
}

/// Asserts that two collections converged: the same documents at the same current revisions with
/// the same bodies, the same revision tree for every id, and no document left in conflict.
func expectConverged(
    _ mine: Collection, _ theirs: Collection, _ context: String = "",
    sourceLocation: SourceLocation = #_sourceLocation
) async throws {
    let revisions = try currentRevisions(mine)
    #expect(revisions == (try currentRevisions(theirs)), "\(context)", sourceLocation: sourceLocation)
    for id in revisions.keys.sorted() {
        let (mineShape, theirShape) = (try treeShape(mine, id), try treeShape(theirs, id))
        #expect(
            mineShape == theirShape,
            "\(context) \(id): local only \(mineShape.subtracting(theirShape).sorted()), remote only \(theirShape.subtracting(mineShape).sorted())",
            sourceLocation: sourceLocation)
        #expect(try mine.revisionTree(id: id).liveLeaves.count <= 1, "\(context) \(id) still in conflict", sourceLocation: sourceLocation)
        #expect(
            try await mine.document(id: id)?.toJSON() == theirs.document(id: id)?.toJSON(), "\(context) \(id)",
            sourceLocation: sourceLocation)
    }
}

/// How a test's replicator reaches the other database.
enum Transport: String, CaseIterable, Sendable, CustomTestStringConvertible {
    /// ``DatabaseEndpoint``: in process, no HTTP.
    case inProcess
    /// ``URLEndpoint``: the other database's listener on a loopback port (the `RemotePeer` client
    /// against the real HTTP server).
    case http
    /// The same over TLS: the listener serves ``TestIdentity``, which the replicator pins.
    case https

    /// The transports that go through the HTTP client and the listener.
    static let network: [Transport] = [.http, .https]

    var testDescription: String { rawValue }
}

/// The identity every HTTPS test listener serves, made once (key generation is slow), and whose
/// certificate the test replicators pin.
enum TestIdentity {
    private static let made = Result { try TLSIdentity.createIdentity(commonName: "127.0.0.1") }

    static func listener() throws -> TLSIdentity { try made.get() }

    /// Pins the listeners' certificate when `config` replicates with an `https://` URL.
    static func pin(_ config: inout ReplicatorConfiguration) throws {
        guard let endpoint = config.target as? URLEndpoint, endpoint.url.scheme == "https" else { return }
        config.pinnedServerCertificate = try listener().certificates[0]
    }
}

/// Two fresh databases and the endpoint through which the first reaches the second's default
/// collection over `transport`.
nonisolated(nonsending) func withTwoDatabases(
    over transport: Transport,
    _ body: (Database, Database, any Endpoint) async throws -> Void
) async throws {
    try await withTwoDatabases { local, remote in
        switch transport {
        case .inProcess:
            try await body(local, remote, DatabaseEndpoint(database: remote))
        case .http, .https:
            try await withListener([try remote.defaultCollection()], over: transport) { listener, _ in
                try await body(local, remote, URLEndpoint(url: listener.urls[0]))
            }
        }
    }
}

/// A configuration replicating `local`'s default collection with `target` (pinning the test
/// listeners' certificate over HTTPS).
func makeConfig(
    _ local: Database, _ target: any Endpoint, _ type: ReplicatorType = .pushAndPull,
    _ collectionConfig: CollectionConfiguration? = nil
) throws -> ReplicatorConfiguration {
    var config = ReplicatorConfiguration(target: target)
    config.addCollection(try local.defaultCollection(), config: collectionConfig)
    config.replicatorType = type
    try TestIdentity.pin(&config)
    return config
}

/// A continuous pull of `local`'s default collection from `url` (`http://host:port/remote`).
func continuousPullConfig(_ local: Database, from url: String, heartbeat: TimeInterval) throws -> ReplicatorConfiguration {
    var config = ReplicatorConfiguration(target: URLEndpoint(url: URL(string: url)!))
    config.addCollection(try local.defaultCollection())
    config.replicatorType = .pull
    config.continuous = true
    config.heartbeat = heartbeat
    return config
}

/// The production peers (``EndpointPeers``), each wrapped by `wrap`: how a test puts a
/// `ReplicationPeer` of its own between the replicator and each real peer.
struct WrappedPeers: ReplicationPeerFactory {
    let wrap: @Sendable (any ReplicationPeer) -> any ReplicationPeer

    func makePeers(
        for collection: Collection, at index: Int, of config: ReplicatorConfiguration,
        options: ReplicationOptions, servers: ServerSelection?
    ) async throws -> (local: any ReplicationPeer, remote: any ReplicationPeer) {
        let (local, remote) = try await EndpointPeers().makePeers(
            for: collection, at: index, of: config, options: options, servers: servers)
        return (wrap(local), wrap(remote))
    }
}

extension Replicator {
    /// A replicator carrying `batchSize` changes per batch, whose peers pass through `wrap`.
    init(
        config: ReplicatorConfiguration, batchSize: Int = ReplicationOptions().batchSize,
        wrap: @escaping @Sendable (any ReplicationPeer) -> any ReplicationPeer = { $0 }
    ) throws {
        try self.init(config: config, options: ReplicationOptions(batchSize: batchSize), peers: WrappedPeers(wrap: wrap))
    }
}
