import Foundation

/// Credentials a ``Replicator`` presents to a ``URLEndpoint`` server. They never appear in logs,
/// status errors or replication ids.
public protocol Authenticator: Sendable {}
