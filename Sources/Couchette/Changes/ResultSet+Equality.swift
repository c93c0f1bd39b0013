extension ResultSet {
    /// True when both hold the same columns and the same rows in the same order: how a live query
    /// decides that a re-run changed nothing.
    func hasSameRows(as other: ResultSet) -> Bool {
        columns.names == other.columns.names && rows == other.rows
    }
}
