/// How one collection replicates: which documents, through which filters, how conflicts resolve.
///
/// ```swift
/// var tasksConfig = CollectionConfiguration()
/// tasksConfig.documentIDs = ["task-1", "task-2"]
/// tasksConfig.pullFilter = { document, flags in flags.contains(.deleted) || document["shared"].boolean }
/// config.addCollection(tasks, config: tasksConfig)
/// ```
public struct CollectionConfiguration: Sendable {
    /// Only these documents replicate (both ways); nil replicates every document.
    public var documentIDs: [String]?
    /// Decides which local revisions are pushed.
    public var pushFilter: ReplicationFilter?
    /// Decides which remote revisions are kept when pulled.
    public var pullFilter: ReplicationFilter?
    /// Resolves conflicts after pulling; nil uses the default (see ``ConflictResolverProtocol``).
    public var conflictResolver: (any ConflictResolverProtocol)?
    /// The remote database or keyspace; by default the database itself for the default
    /// collection and `db.scope.collection` for the others (for ``DatabaseEndpoint``: the
    /// collection of the same scope and name, or `"scope.name"` / `"name"` here).
    public var remoteName: String?

    public init() {}
}
