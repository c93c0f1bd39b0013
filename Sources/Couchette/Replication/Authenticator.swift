import Foundation

/// Credentials a ``Replicator`` presents to a ``URLEndpoint`` server. They never appear in logs,
/// status errors or replication ids.
///
/// ```swift
/// config.authenticator = BasicAuthenticator(username: "alice", password: "secret")
/// ```
public protocol Authenticator: Sendable {}

/// HTTP Basic authentication.
///
/// ```swift
/// config.authenticator = BasicAuthenticator(username: "alice", password: "secret")
/// ```
public struct BasicAuthenticator: Authenticator {
    /// The user name sent in the `Authorization: Basic` header (the password is kept private).
    public let username: String
    let password: String

    /// Credentials sent with every request; use HTTPS, since Basic authentication sends the password
    /// in the clear.
    public init(username: String, password: String) {
        self.username = username
        self.password = password
    }
}

/// A session cookie obtained from the server beforehand (CouchDB's `AuthSession`, Sync
/// Gateway's `SyncGatewaySession`): for CouchDB or a Couchette ``URLEndpointListener``, the
/// `AuthSession` value of the `Set-Cookie` header that `POST /_session` with
/// `{"name": …, "password": …}` answers. A server that refuses the cookie (expired, logged out)
/// stops the replicator with an `.unauthorized` error.
///
/// ```swift
/// config.authenticator = SessionAuthenticator(sessionID: token, cookieName: "AuthSession")
/// ```
public struct SessionAuthenticator: Authenticator {
    /// The cookie's value, sent as `Cookie: <cookieName>=<sessionID>`.
    public let sessionID: String
    /// The cookie's name: `AuthSession` for CouchDB and Couchette listeners, `SyncGatewaySession` for
    /// Sync Gateway.
    public let cookieName: String

    /// A session cookie to present; the default name is Sync Gateway's, as in Couchbase Lite, so pass
    /// `"AuthSession"` for CouchDB or a ``URLEndpointListener``.
    public init(sessionID: String, cookieName: String = "SyncGatewaySession") {
        self.sessionID = sessionID
        self.cookieName = cookieName
    }
}

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
