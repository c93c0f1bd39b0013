import Foundation

/// Makes the HTTP peer for one collection of a ``URLEndpoint`` replication: the seam between
/// the replication engine and the HTTP client. Creating it does no network I/O.
///
/// `remoteName` is the remote database the collection syncs with (see ``RemoteDatabaseNames``):
/// it replaces the last path segment of each of the selection's URLs. Credentials (the authenticator, or
/// `user:password@` in the URL) go into headers, never into the peer's identifier.
///
/// - Throws: `.invalidParameter` for a URL that is not `http(s)://host[:port]/db`.
func makeRemotePeer(
    servers: ServerSelection, remoteName: String, config: ReplicatorConfiguration,
    requestTimeout: TimeInterval
) throws -> any ReplicationPeer {
    var headers = config.headers
    switch config.authenticator {
    case let basic as BasicAuthenticator:
        headers["Authorization"] = "Basic " + Data("\(basic.username):\(basic.password)".utf8).base64EncodedString()
    case let session as SessionAuthenticator:
        headers["Cookie"] = "\(session.cookieName)=\(session.sessionID)"
    default:
        break
    }
    return try RemotePeer(
        urls: try servers.urls.map { try databaseURL($0, remoteName: remoteName) }, selection: servers,
        headers: headers, requestTimeout: requestTimeout, tls: config.clientTLS)
}

/// `url` with its last path segment replaced by `remoteName`.
private func databaseURL(_ url: URL, remoteName: String) throws -> URL {
    guard var components = URLComponents(url: url, resolvingAgainstBaseURL: false) else {
        throw CouchetteError(.invalidParameter, "'\(RemotePeer.redacted(url))' is not a valid URL")
    }
    var segments = components.percentEncodedPath.split(separator: "/").map(String.init)
    guard segments.popLast() != nil else {
        throw CouchetteError(.invalidParameter, "'\(RemotePeer.redacted(url))' names no database (expected http://host:port/db)")
    }
    components.percentEncodedPath = "/" + (segments + [RemotePeer.encodeQueryValue(remoteName)]).joined(separator: "/")
    guard let peerURL = components.url else {
        throw CouchetteError(.invalidParameter, "cannot build the URL of database '\(remoteName)' from '\(RemotePeer.redacted(url))'")
    }
    return peerURL
}
