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
    /// A CouchDB Mango selector: pull only the documents whose current revision it matches,
    /// filtered by the server (`POST _changes?filter=_selector`, as CouchDB's own replicator
    /// does), so the others never travel. Couchbase Lite has no such setting.
    ///
    /// ```swift
    /// var tasksConfig = CollectionConfiguration()
    /// tasksConfig.pullSelector = ["type": "task", "priority": ["$gte": 2]]
    /// ```
    ///
    /// Operators: `$eq $ne $gt $gte $lt $lte $in $nin $exists $type $and $or $nor $not $all
    /// $elemMatch $allMatch $size $mod $regex`, with CouchDB's rules (a plain value means `$eq`,
    /// several fields must all match, dotted field paths, CouchDB's collation; a deleted
    /// document is matched as `{"_id", "_rev", "_deleted": true}`, so deletions pass only a
    /// selector that allows them). With ``DatabaseEndpoint`` the other database applies it in
    /// process. Combined with ``documentIDs``, both must match. A selector that is not valid
    /// reads back as nil and makes `Replicator(config:)` throw `.invalidParameter` naming the
    /// problem.
    public var pullSelector: [String: Any]? {
        get {
            guard case .success(let selector)? = parsedPullSelector else { return nil }
            return ValueConversion.plain(selector.source) as? [String: Any]
        }
        set {
            parsedPullSelector = newValue.map { selector in
                Result { try MangoSelector(ValueConversion.strict(selector, context: "pullSelector")) }
                    .mapError { $0 as? CouchetteError ?? CouchetteError(.invalidParameter, "pullSelector: \($0)") }
            }
        }
    }
    /// ``pullSelector`` parsed when set (the setter cannot throw: `Replicator(config:)` does).
    var parsedPullSelector: Result<MangoSelector, CouchetteError>?
    /// Resolves conflicts after pulling; nil uses the default (see ``ConflictResolverProtocol``).
    public var conflictResolver: (any ConflictResolverProtocol)?
    /// The remote database this collection syncs with.
    ///
    /// For a ``URLEndpoint`` whose URL names the database `db`: a replicator of one collection
    /// syncs it with `db` whatever its local name; with several collections, a collection
    /// without `remoteName` syncs with the keyspace a Couchette listener serves it under (`db`
    /// for the default collection, `db.scope.collection` for the others), so against CouchDB
    /// every other collection needs a `remoteName`: a legal CouchDB database name
    /// (`^[a-z][a-z0-9_$()+/-]*$`) or a Couchette keyspace `db.scope.collection`. Two
    /// collections may not share one; `Replicator(config:)` throws `.invalidParameter` then.
    ///
    /// ```swift
    /// var tasksConfig = CollectionConfiguration()
    /// tasksConfig.remoteName = "tasks"   // http://host:5984/tasks
    /// ```
    ///
    /// For a ``DatabaseEndpoint``: the collection of the same scope and name by default, or
    /// `"scope.name"` / `"name"` here.
    public var remoteName: String?

    /// The defaults: every document in both directions, no filters, the default conflict resolution
    /// and the remote database the endpoint names.
    public init() {}
}
