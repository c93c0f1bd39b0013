import Foundation

/// Makes the HTTP peer for one collection of a ``URLEndpoint`` replication: the seam between
/// the replication engine and the HTTP client. Creating it does no network I/O.
///
/// The URL names the remote database; the default collection replicates with it and a named
/// collection with the keyspace `db.scope.collection`, unless `collectionConfig.remoteName`
/// names another database/keyspace on the same server. Credentials (the authenticator, or
/// `user:password@` in the URL) go into headers, never into the peer's identifier.
///
/// - Throws: `.invalidParameter` for a URL that is not `http(s)://host[:port]/db`.
func makeRemotePeer(url: URL, collection: Collection, config: ReplicatorConfiguration,
                    collectionConfig: CollectionConfiguration) throws -> any ReplicationPeer {
    guard var components = URLComponents(url: url, resolvingAgainstBaseURL: false) else {
        throw CouchetteError(.invalidParameter, "'\(RemotePeer.redacted(url))' is not a valid URL")
    }
    var segments = components.percentEncodedPath.split(separator: "/").map(String.init)
    guard let database = segments.popLast() else {
        throw CouchetteError(.invalidParameter, "'\(RemotePeer.redacted(url))' names no database (expected http://host:port/db)")
    }
    let isDefault = collection.spec.scope == "_default" && collection.name == "_default"
    let keyspace = collectionConfig.remoteName.map { RemotePeer.encodeQueryValue($0) }
        ?? (isDefault ? database : "\(database).\(RemotePeer.encodeQueryValue(collection.spec.scope)).\(RemotePeer.encodeQueryValue(collection.name))")
    components.percentEncodedPath = "/" + (segments + [keyspace]).joined(separator: "/")
    guard let peerURL = components.url else {
        throw CouchetteError(.invalidParameter, "cannot build the URL of keyspace '\(keyspace)' from '\(RemotePeer.redacted(url))'")
    }
    var headers = config.headers
    switch config.authenticator {
    case let basic as BasicAuthenticator:
        headers["Authorization"] = "Basic " + Data("\(basic.username):\(basic.password)".utf8).base64EncodedString()
    case let session as SessionAuthenticator:
        headers["Cookie"] = "\(session.cookieName)=\(session.sessionID)"
    default:
        break
    }
    return try RemotePeer(url: peerURL, headers: headers, requestTimeout: config.requestTimeout, tls: config.clientTLS)
}
