import Foundation

/// A server that speaks CouchDB's replication protocol: another Couchette database served by a
/// ``URLEndpointListener``, Apache CouchDB, PouchDB Server or Cloudant — or several servers of
/// one database, such as the nodes of a CouchDB cluster.
///
/// ```swift
/// let endpoint = URLEndpoint(url: URL(string: "http://localhost:5984/app")!)
/// var config = ReplicatorConfiguration(target: endpoint)
///
/// // A cluster: the first node that answers is used; when it cannot be reached, the next.
/// let cluster = URLEndpoint(urls: ["https://node1:5984/app", "https://node2:5984/app"].map { URL(string: $0)! })
/// ```
///
/// The URL names the remote database: a single replicated collection syncs with it whatever its
/// local name; with several, see ``CollectionConfiguration/remoteName``.
/// `Replicator(config:)` throws `.invalidParameter` for a URL that is not `http` or `https`, for
/// an empty list, and for URLs that do not all name the same database.
///
/// **Failover.** With several URLs the replicator talks to one server at a time (shown as
/// ``Replicator/Status/serverURL``), starting each run with the first that answers. When a
/// request finds its server unreachable — no connection could be opened: refused, no route, a
/// name that does not resolve, or the connect timeout (TCP or TLS handshake) — it is sent to the
/// next URL at once (wrapping around), so a node going down costs no backoff; only when no
/// server can be reached does the replicator go `.offline` and probe them all until one answers.
/// Everything else stays on the server in use: an HTTP error (401, 404, 500 …) is that server
/// speaking for the database, and another node would say the same; a certificate failure
/// (`.tls`) stops the replicator as it does with one URL, because moving on to a node that
/// passes would hide a misconfiguration or an impersonated server; and a connection lost
/// after connecting is retried, which fails over if the server is then unreachable.
/// All URLs share one checkpoint: it is named after the list of URLs (in any order), not after
/// the server in use, so a replication resumes where it stopped on whichever node answers.
/// Changing the list starts a new checkpoint (documents the other side has are not sent again).
/// TLS settings (a pinned certificate, trusted roots) apply to every server of the list.
public struct URLEndpoint: Endpoint {
    /// The remote database's URL (`http` or `https`), credentials excluded: set them with an
    /// ``Authenticator``. With several servers, the first of ``urls``.
    public let url: URL
    /// The servers of the database, in order of preference.
    public let urls: [URL]

    /// An endpoint for the database at `url`, such as `https://sync.example.com/app`; the URL is
    /// checked when the ``Replicator`` is created.
    public init(url: URL) {
        self.url = url
        urls = [url]
    }

    /// Several servers of one database, tried in order (see *Failover* above).
    public init(urls: [URL]) {
        // An empty list is refused by `Replicator(config:)`; `url` then names nothing usable.
        self.url = urls.first ?? URL(string: "about:blank")!
        self.urls = urls
    }
}
