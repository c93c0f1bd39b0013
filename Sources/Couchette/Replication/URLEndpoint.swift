import Foundation

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
