import Foundation

/// Another open database in this process, replicated through the same engine as a remote
/// server but without HTTP.
///
/// ```swift
/// let backup = try Database(name: "backup")
/// var config = ReplicatorConfiguration(target: DatabaseEndpoint(database: backup))
/// config.addCollection(try app.defaultCollection())
/// let replicator = try Replicator(config: config)
/// await replicator.start()
/// ```
///
/// Each replicated collection pairs with the collection of the same scope and name in the target
/// database (or ``CollectionConfiguration/remoteName``, `"scope.name"` or `"name"`), which the
/// replicator creates when missing.
public struct DatabaseEndpoint: Endpoint {
    /// The database replicated with.
    public let database: Database

    /// An endpoint for `database`, which must stay open while the replicator runs.
    public init(database: Database) {
        self.database = database
    }
}
