import Foundation

/// Credentials a ``Replicator`` presents to a ``URLEndpoint`` server. They never appear in logs,
/// status errors or replication ids.
public protocol Authenticator: Sendable {}

/// HTTP Basic authentication.
///
/// ```swift
/// config.authenticator = BasicAuthenticator(username: "alice", password: "secret")
/// ```
public struct BasicAuthenticator: Authenticator {
    public let username: String
    let password: String

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
    public let sessionID: String
    public let cookieName: String

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
    public let identity: TLSIdentity

    public init(identity: TLSIdentity) {
        self.identity = identity
    }
}
