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

    /// Walks the rows in order, making one ``QueryResult`` per row; `for result in results` uses it.
    public struct Iterator: IteratorProtocol {
        private let columns: ColumnNames
        private var rows: IndexingIterator<[[Datum?]]>

        init(_ set: ResultSet) {
            columns = set.columns
            rows = set.rows.makeIterator()
        }

        /// The next row, or nil after the last one.
        public mutating func next() -> QueryResult? {
            rows.next().map { QueryResult(columns: columns, values: $0) }
        }
    }

    /// An iterator from the first row; each call starts over, since the rows do not change.
    public func makeIterator() -> Iterator { Iterator(self) }

    /// The exact number of rows, so `Array(results)` allocates once.
    public var underestimatedCount: Int { rows.count }

    /// The column names, in order.
    public var columnNames: [String] { columns.names }

    /// Every row, as an array.
    public func allResults() -> [QueryResult] { Array(self) }
}
