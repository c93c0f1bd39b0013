import Foundation

/// What a ``URLEndpointListener`` serves and how: collections, port, interface, access.
///
/// Each collection is served under its keyspace: the database name for the default collection
/// (`/todo`), `database.scope.collection` for the others (`/todo.inventory.items`), the naming
/// Sync Gateway uses and a Couchette ``Replicator`` expects.
///
/// ```swift
/// var config = URLEndpointListenerConfiguration(collections: [try db.defaultCollection()])
/// config.port = 5984
/// config.authenticator = ListenerPasswordAuthenticator { user, password in
///     user == "alice" && password == "secret"
/// }
/// let listener = URLEndpointListener(config: config)
/// try await listener.start()
/// ```
public struct URLEndpointListenerConfiguration: Sendable {
    /// The collections served; at least one.
    public var collections: [Collection]
    /// The TCP port; 0 (the default) picks any free port, readable from ``URLEndpointListener/port``.
    public var port: UInt16 = 0
    /// The address to listen on (`"127.0.0.1"`, `"::1"`, `"0.0.0.0"` for every interface); nil
    /// (the default) means loopback only, so nothing is exposed to the network by accident.
    public var networkInterface: String?
    /// When true, requests that would change documents get `403 forbidden`; reads, `_changes`
    /// and replication checkpoints (`_local` documents) still work, so others can pull.
    public var readOnly = false
    /// Who may connect: a ``ListenerPasswordAuthenticator`` (HTTP Basic, or the `AuthSession`
    /// cookie that `POST /_session` hands out for the credentials) or a
    /// ``ListenerCertificateAuthenticator`` (a client certificate that chains to its roots; needs
    /// TLS); nil allows anonymous access.
    public var authenticator: (any ListenerAuthenticator)?
    /// Serve plain HTTP instead of HTTPS. Default false: the listener serves HTTPS, with
    /// ``tlsIdentity`` or, when that is nil, an anonymous self-signed identity made at start
    /// (read it from ``URLEndpointListener/tlsIdentity`` to pin it in clients).
    public var disableTLS = false
    /// The certificate and key served over HTTPS; nil makes an anonymous self-signed one at start.
    public var tlsIdentity: TLSIdentity?
    /// Larger request bodies get `413 too_large` (default 32 MiB). A `multipart/related` document
    /// `PUT` (how CouchDB's replicator sends attachments) is streamed instead: its JSON part is held
    /// to this size, and its attachment parts go straight to the blob store, each bounded by the
    /// length the JSON part declares for it.
    public var maximumRequestBodySize = 32 * 1024 * 1024
    /// Civetweb worker threads: the most requests served at once (each open `_changes` feed holds
    /// one). Default 32.
    public var maximumConcurrentRequests = 32
    /// How long an `AuthSession` cookie stays valid after its last use (CouchDB's default
    /// `chttpd_auth/timeout`: 10 minutes).
    var sessionLifetime: Duration = .seconds(600)

    /// Serves `collections` with the defaults: HTTPS with a generated self-signed identity, any
    /// free port, loopback only, no authentication, read-write.
    public init(collections: [Collection]) {
        self.collections = collections
    }
}
