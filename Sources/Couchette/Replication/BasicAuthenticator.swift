import Foundation

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
