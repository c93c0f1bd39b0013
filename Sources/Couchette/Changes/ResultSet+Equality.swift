extension ResultSet {
    /// True when both hold the same columns and the same rows in the same order: how a live query
    /// decides that a re-run changed nothing.
    func hasSameRows(as other: ResultSet) -> Bool {
        columns.names == other.columns.names && rows.count == other.rows.count
            && zip(rows, other.rows).allSatisfy { left, right in
                left.count == right.count && zip(left, right).allSatisfy(Datum.sameResult)
            }
    }
}
