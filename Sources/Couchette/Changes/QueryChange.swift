/// One state of a live query, delivered by ``Query/changes()``: the complete current results, or
/// the error that prevented computing them.
///
/// ```swift
/// for await change in query.changes() {
///     if let error = change.error { print("query failed: \(error)"); continue }
///     let titles = change.results?.map { $0.string(forKey: "title") ?? "" } ?? []
///     print(titles)
/// }
/// ```
public struct QueryChange: Sendable {
    /// The live query.
    public let query: Query
    /// Every row of the query's current results (not a delta); nil when ``error`` is set.
    public let results: ResultSet?
    /// Why the query could not run (a missing parameter, a closed database, a deleted
    /// collection); nil when ``results`` is set. Errors are always delivered, never swallowed.
    public let error: (any Error)?
}
