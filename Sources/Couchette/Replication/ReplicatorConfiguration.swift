import Foundation

/// Everything a ``Replicator`` needs: the target, the collections, direction, mode and retries.
///
/// ```swift
/// var config = ReplicatorConfiguration(target: URLEndpoint(url: URL(string: "http://server:4984/app")!))
/// config.addCollection(try db.defaultCollection())
/// config.replicatorType = .pushAndPull
/// config.continuous = true
/// config.authenticator = BasicAuthenticator(username: "alice", password: "secret")
/// let replicator = try Replicator(config: config)
/// ```
///
/// The configuration is copied into the replicator: changing it afterwards has no effect there.
public struct ReplicatorConfiguration: Sendable {
    /// Where documents go to and come from.
    public let target: any Endpoint
    /// The collections added with ``addCollection(_:config:)``, in order.
    public private(set) var collections: [Collection] = []
    private(set) var collectionConfigs: [CollectionConfiguration] = []
    /// Default `.pushAndPull`.
    public var replicatorType: ReplicatorType = .pushAndPull
    /// false (default): replicate what there is, then stop. true: keep going and wait for changes.
    public var continuous = false
    /// Credentials: ``BasicAuthenticator``, ``SessionAuthenticator`` or ``ClientCertificateAuthenticator``.
    public var authenticator: (any Authenticator)?
    /// Extra HTTP headers sent with every request to a ``URLEndpoint``.
    public var headers: [String: String] = [:]
    /// Seconds between keep-alive signals of a waiting continuous replication (default 300).
    public var heartbeat: TimeInterval = 300
    /// How many times a failing replication is tried in a row before it stops with the error;
    /// 0 (default) means 10 for a one-shot replication and unlimited for a continuous one.
    public var maxAttempts: UInt = 0
    /// The longest wait between two attempts, in seconds (default 300). Waits double from one
    /// second up to this.
    public var maxAttemptWaitTime: TimeInterval = 300
    /// The server's certificate (DER, e.g. ``TLSIdentity/certificates```[0]` of a listener):
    /// HTTPS connections accept exactly this certificate, without checking the host name or a
    /// certificate authority. Any other certificate stops the replicator with `.tls` ("wrong pin").
    ///
    /// ```swift
    /// config.pinnedServerCertificate = listener.tlsIdentity?.certificates.first
    /// ```
    public var pinnedServerCertificate: Data?
    /// The SHA-256 of the server's certificate (``TLSIdentity/sha256Fingerprint``; hex, case and
    /// colons ignored), an alternative to ``pinnedServerCertificate`` for pins given as text, such
    /// as the fingerprint `couchette serve` prints.
    public var pinnedServerCertificateSHA256: String?
    /// Accept any self-signed server certificate (and nothing else) instead of checking the
    /// system trust store; the host name is not checked. For peers serving Couchette's anonymous
    /// identity when pinning is impractical; pinning is safer.
    public var acceptOnlySelfSignedServerCertificate = false
    /// Root certificates (DER) trusted instead of the system trust store for HTTPS (what
    /// `couchette replicate --cacert` sets); the host name is checked against the server's
    /// certificate. Nil (default): the system trust store.
    public var trustedRootCertificates: [Data]?

    /// A configuration for replicating with `target`: push and pull, one-shot, no collections yet
    /// (add them with ``addCollection(_:config:)``), the system trust store for HTTPS.
    public init(target: any Endpoint) {
        self.target = target
    }

    /// The HTTPS settings of this configuration for the HTTP client; nil when there are none.
    var clientTLS: HTTPClientTLS? {
        let identity = (authenticator as? ClientCertificateAuthenticator)?.identity
        guard
            pinnedServerCertificate != nil || pinnedServerCertificateSHA256 != nil || acceptOnlySelfSignedServerCertificate
                || trustedRootCertificates != nil || identity != nil
        else {
            return nil
        }
        let fingerprint = pinnedServerCertificateSHA256.map { $0.lowercased().filter(\.isHexDigit) }
        return HTTPClientTLS(
            pinnedCertificate: pinnedServerCertificate, pinnedFingerprint: fingerprint,
            acceptOnlySelfSigned: acceptOnlySelfSignedServerCertificate,
            trustedRoots: trustedRootCertificates, clientCertificatePEM: identity?.certificatePEM,
            clientKeyPEM: identity?.privateKeyPEM)
    }

    /// Adds `collection` (with its own filters and resolver), or replaces its configuration.
    public mutating func addCollection(_ collection: Collection, config: CollectionConfiguration? = nil) {
        if let index = collections.firstIndex(of: collection) {
            collectionConfigs[index] = config ?? CollectionConfiguration()
            return
        }
        collections.append(collection)
        collectionConfigs.append(config ?? CollectionConfiguration())
    }

    /// The attempts allowed in a row (see ``maxAttempts``).
    var effectiveMaxAttempts: UInt {
        maxAttempts != 0 ? maxAttempts : (continuous ? .max : 10)
    }
}
