import Foundation

/// Checks HTTP Basic credentials for a ``URLEndpointListener``.
///
/// ```swift
/// config.authenticator = ListenerPasswordAuthenticator { user, password in
///     user == "alice" && password == "secret"
/// }
/// ```
public struct ListenerPasswordAuthenticator: ListenerAuthenticator {
    let authenticate: @Sendable (_ user: String, _ password: String) -> Bool

    /// `authenticate` runs for every request; return true to accept the credentials.
    public init(_ authenticate: @escaping @Sendable (_ user: String, _ password: String) -> Bool) {
        self.authenticate = authenticate
    }
}
