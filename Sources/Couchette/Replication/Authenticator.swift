import Foundation

/// Credentials a ``Replicator`` presents to a ``URLEndpoint`` server. They never appear in logs,
/// status errors or replication ids.
///
/// ```swift
/// config.authenticator = BasicAuthenticator(username: "alice", password: "secret")
/// ```
public protocol Authenticator: Sendable {}
