import Foundation

/// Serves collections over the CouchDB HTTP replication API, so other Couchette replicators,
/// CouchDB's replicator and PouchDB can push to and pull from this database.
///
/// The HTTP server is civetweb; each request is read on a civetweb thread and answered by async
/// Swift code. See ``URLEndpointListenerConfiguration`` for keyspaces, ports and access.
///
/// ```swift
/// let listener = URLEndpointListener(config: URLEndpointListenerConfiguration(collections: [try db.defaultCollection()]))
/// try await listener.start()
/// print(listener.urls)           // [https://127.0.0.1:54321/todo]
/// // … a replicator elsewhere targets URLEndpoint(url: listener.urls[0]) …
/// await listener.stop()
/// ```
public final class URLEndpointListener: Sendable {
    /// The configuration the listener was created with.
    public let config: URLEndpointListenerConfiguration
    private let router: ListenerRouter
    private let server: HTTPServer
    private let running = Locked<(port: UInt16, identity: TLSIdentity?)?>(nil)

    /// A stopped listener for `config`; nothing is bound until ``start()``, which reports a busy port or
    /// a bad TLS identity.
    public init(config: URLEndpointListenerConfiguration) {
        self.config = config
        router = ListenerRouter(config: config)
        server = HTTPServer(maximumBodySize: config.maximumRequestBodySize) { [router] request in
            await router.handle(request)
        }
    }

    /// Starts listening: HTTPS unless ``URLEndpointListenerConfiguration/disableTLS`` is set.
    /// Calling it while running does nothing.
    /// - Throws: `.invalidParameter` for no collections, two collections with one keyspace, or a
    ///   ``ListenerCertificateAuthenticator`` without TLS or without roots; `.io` when the port
    ///   cannot be bound (for example, in use); `.tls` when TLS cannot be set up.
    public func start() async throws {
        guard port == nil else { return }
        try router.validate()
        let certificates = config.authenticator as? ListenerCertificateAuthenticator
        var tls: HTTPServer.TLSSetup?
        if config.disableTLS {
            guard certificates == nil else {
                throw CouchetteError(.invalidParameter, "ListenerCertificateAuthenticator needs TLS, but disableTLS is set")
            }
        } else {
            // Couchbase Lite's default: an anonymous self-signed identity, named after the address
            // served so a client that trusts it by CA file can also check the host name.
            let identity =
                try config.tlsIdentity
                ?? TLSIdentity.createIdentity(commonName: urlHost.trimmingCharacters(in: CharacterSet(charactersIn: "[]")))
            tls = HTTPServer.TLSSetup(identity: identity, clientRoots: certificates?.rootCertificates)
        }
        let bound = try server.start(host: host, port: config.port, threads: max(2, config.maximumConcurrentRequests), tls: tls)
        running.withLock { $0 = (bound, tls?.identity) }
    }

    /// Stops listening, ends open `_changes` feeds, and returns once every connection is closed.
    public func stop() async {
        await server.stop()
        running.withLock { $0 = nil }
    }

    /// The port listened on while running (the chosen one when configured with 0), else nil.
    public var port: UInt16? { running.withLock { $0?.port } }

    /// The identity served over HTTPS while running (the configured one, or the anonymous one made
    /// at start); nil before ``start()``, after ``stop()``, and when TLS is disabled.
    public var tlsIdentity: TLSIdentity? { running.withLock { $0?.identity } }

    /// One URL per served collection while running, e.g. `https://127.0.0.1:5984/todo`
    /// (`http://` when TLS is disabled).
    public var urls: [URL] {
        guard let (port, identity) = running.withLock({ $0 }) else { return [] }
        let scheme = identity == nil ? "http" : "https"
        return router.keyspaces.compactMap { URL(string: "\(scheme)://\(urlHost):\(port)/\($0)") }
    }

    /// The host part of ``urls``: loopback for a wildcard address, brackets around IPv6.
    private var urlHost: String {
        switch host {
        case "0.0.0.0": "127.0.0.1"
        case "::": "[::1]"
        case let address where address.contains(":"): "[\(address)]"
        case let address: address
        }
    }

    /// Open connections and requests being answered right now.
    public var status: ConnectionStatus {
        let counts = server.counts
        return ConnectionStatus(connectionCount: counts.connections, activeConnectionCount: counts.activeRequests)
    }

    private var host: String { config.networkInterface ?? "127.0.0.1" }
}
