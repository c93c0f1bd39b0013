import CSQLite
import Foundation

/// The query workloads in SQLite: `json_extract` over the JSON text, expression indexes on the
/// same paths, prepared statements reused, `case_sensitive_like` so LIKE means what it does in
/// SQL++.
extension SQLiteEngine: QueryBenchmarkEngine {
    private static func extract(_ path: String, _ column: String = "body") -> String {
        "json_extract(\(column), '$.\(path)')"
    }

    public func createIndex(_ name: String, path: BenchmarkQuery.Path) async throws {
        try execute("CREATE INDEX IF NOT EXISTS \"\(name)\" ON docs (\(Self.extract(path.rawValue)))")
        try execute("ANALYZE")
    }

    public func insertOrders(_ orders: [DocumentGenerator.GeneratedDocument]) async throws {
        try execute("CREATE TABLE IF NOT EXISTS orders (id TEXT PRIMARY KEY, body TEXT NOT NULL) WITHOUT ROWID")
        let insert = try prepareStatement("INSERT OR REPLACE INTO orders (id, body) VALUES (?, ?)")
        defer { sqlite3_finalize(insert) }
        try transaction {
            for order in orders { try step(insert, [order.id, order.json]) }
        }
    }

    public func prepare(_ query: BenchmarkQuery) throws -> (String?) async throws -> [[String]] {
        try execute("PRAGMA case_sensitive_like = ON")
        let email = Self.extract(BenchmarkQuery.Path.email.rawValue), birthday = Self.extract("birthday")
        let state = Self.extract("contact.address.state")
        let sql: String
        switch query {
        case .pointLookup:
            sql = "SELECT id, \(Self.extract("name.first")) FROM docs WHERE \(email) = ?"
        case .rangeLimit:
            sql = "SELECT id, \(birthday) FROM docs WHERE \(birthday) >= ? ORDER BY \(birthday) LIMIT 20"
        case .likeScan:
            sql = "SELECT id FROM docs WHERE \(Self.extract("name.last")) LIKE '%an%'"
        case .groupBy:
            sql = "SELECT \(state) AS s, COUNT(*), MAX(\(Self.extract("visits"))) FROM docs GROUP BY s ORDER BY s"
        case .join:
            sql = """
                SELECT o.id, \(Self.extract("name.last", "p.body")) FROM orders AS o JOIN docs AS p
                ON p.id = \(Self.extract("person", "o.body")) WHERE \(Self.extract("amount", "o.body")) >= ?
                """
        }
        let statement = try PreparedStatement(self, sql)
        return { value in
            var rows: [[String]] = []
            let columns = Int(sqlite3_column_count(statement.handle))
            let read: (OpaquePointer?) -> Void = { row in
                rows.append(
                    (0..<columns).map { column in
                        sqlite3_column_text(row, Int32(column)).map { String(cString: $0) } ?? "null"
                    })
            }
            if let value, let number = Int(value) {
                sqlite3_bind_int64(statement.handle, 1, Int64(number))
                try self.step(statement.handle, [], row: read)
            } else {
                try self.step(statement.handle, value.map { [$0] } ?? [], row: read)
            }
            return rows
        }
    }
}

/// A statement finalized when the last closure holding it goes away.
final class PreparedStatement {
    let handle: OpaquePointer?

    init(_ engine: SQLiteEngine, _ sql: String) throws { handle = try engine.prepareStatement(sql) }

    deinit { sqlite3_finalize(handle) }
}
