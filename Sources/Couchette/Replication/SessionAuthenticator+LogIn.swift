import Foundation

extension SessionAuthenticator {
    /// Logs in to the server of `config`'s ``URLEndpoint`` with CouchDB's cookie authentication
    /// (`POST /_session` with the name and password) and returns the session it hands out, for
    /// ``ReplicatorConfiguration/authenticator``: the password crosses the network once, and
    /// the replicator then sends the `AuthSession` cookie, which the server renews as it ages.
    ///
    /// ```swift
    /// var config = ReplicatorConfiguration(target: URLEndpoint(url: URL(string: "https://db.example.com/app")!))
    /// config.addCollection(try db.defaultCollection())
    /// config.authenticator = try await SessionAuthenticator.logIn(to: config, username: "alice", password: "s3cret")
    /// let replicator = try Replicator(config: config)
    /// ```
    ///
    /// The request uses `config`'s TLS settings (pinned certificate, trusted roots, client
    /// certificate), its headers, and its server list: the first server of
    /// ``URLEndpoint/urls`` that can be reached answers. The session ends when the server
    /// forgets it (CouchDB: 10 minutes without use by default); the replicator then stops with
    /// `.unauthorized`, and logging in again gives a new one.
    ///
    /// - Returns: the session cookie (`AuthSession`) as a ``SessionAuthenticator``.
    /// - Throws: `.unauthorized` for a wrong name or password; `.invalidParameter` when the
    ///   target is not a ``URLEndpoint``; `.io` when no server can be reached; `.tls` for a
    ///   refused certificate; `.http(status:)` when the server answers with another error or
    ///   without a session cookie (a server without cookie authentication).
    public static func logIn(to config: ReplicatorConfiguration, username: String, password: String) async throws -> SessionAuthenticator {
        guard let endpoint = config.target as? URLEndpoint, !endpoint.urls.isEmpty else {
            throw CouchetteError(.invalidParameter, "logging in needs a URLEndpoint target")
        }
        let peer = try RemotePeer(
            urls: endpoint.urls, selection: ServerSelection(urls: endpoint.urls), headers: config.headers,
            requestTimeout: ReplicationOptions().requestTimeout, tls: config.clientTLS)
        let body: Value = .dictionary(["name": .string(username), "password": .string(password)])
        let (_, response) = try await peer.exchange("POST", "/_session", body: body, atRoot: true)
        let cookieName = "AuthSession"
        for cookie in response.cookies {
            guard let pair = cookie.split(separator: ";").first?.trimmingCharacters(in: .whitespaces),
                pair.hasPrefix(cookieName + "=")
            else { continue }
            let value = pair.dropFirst(cookieName.count + 1)
            if !value.isEmpty { return SessionAuthenticator(sessionID: String(value), cookieName: cookieName) }
        }
        throw CouchetteError(
            .http(status: 502), "POST /_session at \(peer.base) answered without an \(cookieName) cookie: the server offers no cookie login"
        )
    }
}
