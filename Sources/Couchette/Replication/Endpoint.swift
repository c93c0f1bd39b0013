import Foundation

/// Where a ``Replicator`` replicates to: ``URLEndpoint`` (a CouchDB-protocol server) or
/// ``DatabaseEndpoint`` (another open database in this process).
///
/// ```swift
/// let remote = ReplicatorConfiguration(target: URLEndpoint(url: URL(string: "https://sync.example.com/app")!))
/// let local = ReplicatorConfiguration(target: DatabaseEndpoint(database: backup))
/// ```
public protocol Endpoint: Sendable {}
