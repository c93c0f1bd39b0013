import Foundation

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
