import Foundation

/// Where a ``Replicator`` replicates to: ``URLEndpoint`` (a CouchDB-protocol server) or
/// ``DatabaseEndpoint`` (another open database in this process).
public protocol Endpoint: Sendable {}
