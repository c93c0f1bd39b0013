/// The rows of one query execution.
///
/// Unlike Couchbase Lite's single-pass enumerator, a `ResultSet` is a value: iterate it as often
/// as you like, pass it between tasks, keep it after the database changes (it does not change).
///
/// ```swift
/// let results = try await query.execute()
/// for result in results { print(result.toJSON()) }
/// let tasks = try results.data(as: TodoTask.self)
/// ```
public struct ResultSet: Sequence, Sendable {
    let columns: ColumnNames
    let rows: [[Datum?]]

    public struct Iterator: IteratorProtocol {
        private let columns: ColumnNames
        private var rows: IndexingIterator<[[Datum?]]>

        init(_ set: ResultSet) {
            columns = set.columns
            rows = set.rows.makeIterator()
        }

        public mutating func next() -> QueryResult? {
            rows.next().map { QueryResult(columns: columns, values: $0) }
        }
    }

    public func makeIterator() -> Iterator { Iterator(self) }

    public var underestimatedCount: Int { rows.count }

    /// The column names, in order.
    public var columnNames: [String] { columns.names }

    /// Every row, as an array.
    public func allResults() -> [QueryResult] { Array(self) }
}
