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
/// print(listener.urls)           // [http://127.0.0.1:54321/todo]
/// // … a replicator elsewhere targets URLEndpoint(url: listener.urls[0]) …
/// await listener.stop()
/// ```
public final class URLEndpointListener: Sendable {
    /// The configuration the listener was created with.
    public let config: URLEndpointListenerConfiguration
    private let router: ListenerRouter
    private let server: HTTPServer
    private let boundPort = Locked<UInt16?>(nil)

    public init(config: URLEndpointListenerConfiguration) {
        self.config = config
        router = ListenerRouter(config: config)
        server = HTTPServer(maximumBodySize: config.maximumRequestBodySize) { [router] request in
            await router.handle(request)
        }
    }

    /// Starts listening. Calling it while running does nothing.
    /// - Throws: `.invalidParameter` for no collections or two collections with one keyspace;
    ///   `.io` when the port cannot be bound (for example, in use).
    public func start() async throws {
        guard port == nil else { return }
        try router.validate()
        let bound = try server.start(host: host, port: config.port, threads: max(2, config.maximumConcurrentRequests))
        boundPort.withLock { $0 = bound }
    }

    /// Stops listening, ends open `_changes` feeds, and returns once every connection is closed.
    public func stop() async {
        await server.stop()
        boundPort.withLock { $0 = nil }
    }

    /// The port listened on while running (the chosen one when configured with 0), else nil.
    public var port: UInt16? { boundPort.withLock { $0 } }

    /// One URL per served collection while running, e.g. `http://127.0.0.1:5984/todo`.
    public var urls: [URL] {
        guard let port else { return [] }
        let urlHost = switch host {
        case "0.0.0.0": "127.0.0.1"
        case "::": "[::1]"
        case let address where address.contains(":"): "[\(address)]"
        case let address: address
        }
        return router.keyspaces.compactMap { URL(string: "http://\(urlHost):\(port)/\($0)") }
    }

    /// Open connections and requests being answered right now.
    public var status: ConnectionStatus {
        let counts = server.counts
        return ConnectionStatus(connectionCount: counts.connections, activeConnectionCount: counts.activeRequests)
    }

    private var host: String { config.networkInterface ?? "127.0.0.1" }
}

/// A ``URLEndpointListener``'s connections: open ones, and those busy with a request.
public struct ConnectionStatus: Sendable, Equatable {
    /// Open TCP connections (idle keep-alive connections included).
    public let connectionCount: Int
    /// Connections whose request is being answered (an open `_changes` feed counts).
    public let activeConnectionCount: Int
}
