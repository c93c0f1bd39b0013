import Foundation

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
