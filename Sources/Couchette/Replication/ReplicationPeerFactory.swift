/// Makes the two peers of each replicated collection: the seam through which a ``Replicator``
/// gets what it talks to.
///
/// Production uses ``EndpointPeers``; a test passes a factory of its own, typically one that
/// wraps EndpointPeers' peers in a `ReplicationPeer` counting or failing calls.
protocol ReplicationPeerFactory: Sendable {
    /// The local peer of `collection` (the `index`th of `config.collections`) and the peer of
    /// what it replicates with. `servers` (for a ``URLEndpoint``) is the replicator's list of
    /// servers and the one in use, which the remote peers of all its collections share.
    func makePeers(
        for collection: Collection, at index: Int, of config: ReplicatorConfiguration,
        options: ReplicationOptions, servers: ServerSelection?
    ) async throws -> (local: any ReplicationPeer, remote: any ReplicationPeer)
}

/// The peers a configuration names: a ``LocalPeer`` of the local collection and, for the target,
/// a ``LocalPeer`` of the counterpart collection (``DatabaseEndpoint``, created when missing) or a
/// ``RemotePeer`` (``URLEndpoint``).
struct EndpointPeers: ReplicationPeerFactory {
    func makePeers(
        for collection: Collection, at index: Int, of config: ReplicatorConfiguration,
        options: ReplicationOptions, servers: ServerSelection?
    ) async throws -> (local: any ReplicationPeer, remote: any ReplicationPeer) {
        let remote: any ReplicationPeer
        switch config.target {
        case let endpoint as DatabaseEndpoint:
            let remoteName = config.collectionConfigs[index].remoteName
            remote = try LocalPeer(collection: try await Self.counterpart(of: collection, in: endpoint.database, remoteName: remoteName))
        case let endpoint as URLEndpoint:
            let names = try RemoteDatabaseNames.resolve(
                url: endpoint.url, collections: config.collections, configs: config.collectionConfigs)
            remote = try makeRemotePeer(
                servers: servers ?? ServerSelection(urls: endpoint.urls), remoteName: names[index], config: config,
                requestTimeout: options.requestTimeout)
        default:
            throw CouchetteError(.invalidParameter, "unsupported endpoint type \(type(of: config.target))")
        }
        return (try LocalPeer(collection: collection), remote)
    }

    /// The collection of `database` that `collection` replicates with, created when missing.
    private static func counterpart(of collection: Collection, in database: Database, remoteName: String?) async throws -> Collection {
        var scope = collection.scope.name
        var name = collection.name
        if let remoteName {
            let parts = remoteName.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
            guard (1...2).contains(parts.count) else {
                throw CouchetteError(.invalidParameter, "remoteName '\(remoteName)' must be 'collection' or 'scope.collection'")
            }
            name = parts[parts.count - 1]
            scope = parts.count == 2 ? parts[0] : Catalog.defaultName
        }
        if let existing = try database.collection(name: name, scope: scope) { return existing }
        return try await database.createCollection(name: name, scope: scope)
    }
}
