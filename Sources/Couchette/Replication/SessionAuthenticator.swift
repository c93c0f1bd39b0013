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
    public let sessionID: String
    public let cookieName: String

    public init(sessionID: String, cookieName: String = "SyncGatewaySession") {
        self.sessionID = sessionID
        self.cookieName = cookieName
    }
}
