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
