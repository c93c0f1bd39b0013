import Foundation

/// Requires every client of an HTTPS ``URLEndpointListener`` to present a certificate that chains
/// to one of `rootCertificates` (DER); the TLS handshake fails for any other client. A self-signed
/// client certificate may be its own root.
///
/// ```swift
/// let client = try TLSIdentity.createIdentity(commonName: "phone")
/// config.authenticator = ListenerCertificateAuthenticator(rootCertificates: [client.certificates[0]])
/// // the replicator: config.authenticator = ClientCertificateAuthenticator(identity: client)
/// ```
public struct ListenerCertificateAuthenticator: ListenerAuthenticator {
    /// The trusted roots, DER. Only these: the system's certificate authorities are not trusted.
    public let rootCertificates: [Data]

    /// Accepts clients whose certificate chains up to one of `rootCertificates` (DER).
    public init(rootCertificates: [Data]) {
        self.rootCertificates = rootCertificates
    }
}
