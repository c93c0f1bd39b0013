/// Describes an index to create with ``Collection/createIndex(withName:config:)``:
/// ``ValueIndexConfiguration`` or ``ArrayIndexConfiguration``.
///
/// ```swift
/// try await tasks.createIndex(withName: "byDue", config: ValueIndexConfiguration(["due"]))
/// ```
public protocol IndexConfiguration: Sendable {}

/// An index over one or more SQL++ expressions of each document, kept in expression order.
///
/// Queries that filter with `=`, `<`, `<=`, `>`, `>=`, `IN`, `BETWEEN`, `LIKE 'prefix%'`,
/// `IS NULL` or `IS VALUED` on the first expression (or on a leading run of them, joined by
/// `AND`), or that sort by them with a `LIMIT`, read the index instead of every document.
/// With `where:` only the documents matching the condition are indexed (a partial index): a query
/// uses it only when its own WHERE contains that condition.
///
/// ```swift
/// try await people.createIndex(withName: "byCity", config: ValueIndexConfiguration(["address.city", "name"]))
/// try await orders.createIndex(withName: "openByDate",
///                              config: ValueIndexConfiguration(["date"], where: "status = 'open'"))
/// ```
public struct ValueIndexConfiguration: IndexConfiguration, Equatable {
    /// The indexed expressions, e.g. `["lastName", "LOWER(firstName)"]`.
    public let expressions: [String]
    /// The condition of a partial index, or nil to index every document.
    public let whereClause: String?

    /// An index over `expressions` (SQL++ text), optionally only over the documents
    /// matching `whereClause`; both are checked by ``Collection/createIndex(withName:config:)``.
    public init(_ expressions: [String], where whereClause: String? = nil) {
        self.expressions = expressions
        self.whereClause = whereClause
    }
}

/// An index with one entry per member of an array property (or per value of a dictionary), so
/// that `ANY x IN path SATISFIES …` and `UNNEST path` find their documents without a full scan.
///
/// With no `expressions`, the members themselves are indexed; otherwise each expression is
/// evaluated on each member (`"type"` reads the member's `type` property).
///
/// ```swift
/// try await people.createIndex(withName: "byTag", config: ArrayIndexConfiguration(path: "tags"))
/// let query = try db.createQuery("SELECT name FROM people WHERE ANY t IN tags SATISFIES t = 'admin' END")
/// ```
public struct ArrayIndexConfiguration: IndexConfiguration, Equatable {
    /// The property path of the array, e.g. `"contacts"` or `"profile.phones"`.
    public let path: String
    /// Expressions on each member, or nil for the member itself.
    public let expressions: [String]?

    /// An index over the members of the array at `path`, or over `expressions` evaluated on each
    /// member; checked by ``Collection/createIndex(withName:config:)``.
    public init(path: String, expressions: [String]? = nil) {
        self.path = path
        self.expressions = expressions
    }
}
