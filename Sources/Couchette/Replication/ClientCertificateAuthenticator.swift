import Foundation

/// Presents a client certificate in the TLS handshake with an HTTPS server, such as a
/// ``URLEndpointListener`` configured with ``ListenerCertificateAuthenticator``. A server that
/// refuses it stops the replicator with `CouchetteError(.tls)` ("client certificate refused").
///
/// ```swift
/// let identity = try TLSIdentity.identity(certificatePEM: certPEM, privateKeyPEM: keyPEM)
/// config.authenticator = ClientCertificateAuthenticator(identity: identity)
/// ```
public struct ClientCertificateAuthenticator: Authenticator {
    /// The certificate chain and private key presented to the server.
    public let identity: TLSIdentity

    /// Presents `identity` whenever the server asks for a client certificate.
    public init(identity: TLSIdentity) {
        self.identity = identity
    }
}
