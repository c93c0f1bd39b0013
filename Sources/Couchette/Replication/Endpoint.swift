import Foundation

/// Where a ``Replicator`` replicates to: ``URLEndpoint`` (a CouchDB-protocol server) or
/// ``DatabaseEndpoint`` (another open database in this process).
///
/// ```swift
/// let remote = ReplicatorConfiguration(target: URLEndpoint(url: URL(string: "https://sync.example.com/app")!))
/// let local = ReplicatorConfiguration(target: DatabaseEndpoint(database: backup))
/// ```
public protocol Endpoint: Sendable {}

/// A server that speaks CouchDB's replication protocol: another Couchette database served by a
/// ``URLEndpointListener``, Apache CouchDB, PouchDB Server or Cloudant.
///
/// ```swift
/// let endpoint = URLEndpoint(url: URL(string: "http://localhost:5984/app")!)
/// var config = ReplicatorConfiguration(target: endpoint)
/// ```
///
/// The URL names the remote database: a single replicated collection syncs with it whatever its
/// local name; with several, see ``CollectionConfiguration/remoteName``.
/// `Replicator(config:)` throws `.invalidParameter` for a URL that is not `http` or `https`.
public struct URLEndpoint: Endpoint {
    /// The remote database's URL (`http` or `https`), credentials excluded: set them with an
    /// ``Authenticator``.
    public let url: URL

    /// An endpoint for the database at `url`, such as `https://sync.example.com/app`; the URL is
    /// checked when the ``Replicator`` is created.
    public init(url: URL) {
        self.url = url
    }
}

/// Another open database in this process, replicated through the same engine as a remote
/// server but without HTTP.
///
/// ```swift
/// let backup = try Database(name: "backup")
/// var config = ReplicatorConfiguration(target: DatabaseEndpoint(database: backup))
/// config.addCollection(try app.defaultCollection())
/// let replicator = try Replicator(config: config)
/// await replicator.start()
/// ```
///
/// Each replicated collection pairs with the collection of the same scope and name in the target
/// database (or ``CollectionConfiguration/remoteName``, `"scope.name"` or `"name"`), which the
/// replicator creates when missing.
public struct DatabaseEndpoint: Endpoint {
    /// The database replicated with.
    public let database: Database

    /// An endpoint for `database`, which must stay open while the replicator runs.
    public init(database: Database) {
        self.database = database
    }
}
