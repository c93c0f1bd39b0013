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
