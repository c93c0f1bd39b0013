import CSQLite
import Foundation

/// The full-text workloads in SQLite: the sentences in a rowid table, an FTS5 index over it as
/// external content (`unicode61`, diacritics kept: the same words as Couchette's tokenizer for
/// these sentences), ranked by FTS5's `rank` (bm25).
extension SQLiteEngine: FullTextBenchmarkEngine {
    public func insertSentences(_ sentences: [(id: String, text: String)]) async throws {
        try execute("CREATE TABLE IF NOT EXISTS sentences (rowid INTEGER PRIMARY KEY, id TEXT UNIQUE NOT NULL, sentence TEXT NOT NULL)")
        let insert = try prepareStatement("INSERT INTO sentences (id, sentence) VALUES (?, ?)")
        defer { sqlite3_finalize(insert) }
        try transaction {
            for sentence in sentences { try step(insert, [sentence.id, sentence.text]) }
        }
    }

    public func createFullTextIndex() async throws {
        try transaction {
            try execute(
                """
                CREATE VIRTUAL TABLE ft USING fts5(sentence, content='sentences', content_rowid='rowid',
                                                   tokenize='unicode61 remove_diacritics 0')
                """)
            try execute("INSERT INTO ft(ft) VALUES('rebuild')")
        }
    }

    public func prepareFullTextSearch() throws -> (String) async throws -> [[String]] {
        let statement = try PreparedStatement(
            self,
            """
            SELECT s.id, s.sentence FROM (SELECT rowid, rank FROM ft WHERE ft MATCH ? ORDER BY rank LIMIT 20) AS m
            JOIN sentences AS s ON s.rowid = m.rowid ORDER BY m.rank
            """)
        return { text in
            var rows: [[String]] = []
            try self.step(statement.handle, [text]) { row in
                rows.append([String(cString: sqlite3_column_text(row, 0)), String(cString: sqlite3_column_text(row, 1))])
            }
            return rows
        }
    }
}
