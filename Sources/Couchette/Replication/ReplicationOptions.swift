import Foundation

/// Internal tuning of a ``Replicator``, kept out of the public ``ReplicatorConfiguration``: the
/// defaults are what every user gets; tests pass smaller values to `Replicator(config:options:peers:)`.
struct ReplicationOptions: Sendable {
    /// How many changes one batch carries.
    var batchSize = 500
    /// Seconds without a byte after which an HTTP request fails with `.io` and is retried.
    var requestTimeout: TimeInterval = 60
}
