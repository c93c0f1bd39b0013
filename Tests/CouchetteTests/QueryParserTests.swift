import Foundation
import Testing

@testable import Couchette

/// Which SQL++ texts `createQuery` accepts, and the messages (position and expectation) of the ones
/// it rejects.
@Suite(.tags(.sanitizeAddress, .sanitizeAddress)) struct QueryParserTests {
    static let accepted = [
        "SELECT a FROM _",
        "select a from _ where b = 1 order by a desc limit 1 offset 2",
        "SELECT ALL a FROM _;",
        "SELECT a, b AS c, d e FROM _default._default AS x",
        "SELECT `select`, `a b`.c, `x``y` FROM _",
        "SELECT * AS everything FROM _",
        "SELECT x.*, META(x).id FROM _ x",
        "SELECT a FROM _ -- trailing comment",
        "SELECT /* inline */ a FROM _",
        "SELECT a FROM _ OFFSET 1",
        "SELECT a FROM _ OFFSET 1 LIMIT 2",
        "SELECT a[0][1].b, a[$i] FROM _",
        "SELECT {'a': [1, {\"b\": {}}], c: 2} FROM _",
        "SELECT -a, +b, NOT c, a IS NOT VALUED, a NOT BETWEEN 1 AND 2 FROM _",
        "SELECT CASE WHEN a THEN 1 WHEN b THEN 2 ELSE 3 END FROM _",
        "SELECT ANY AND EVERY x IN a SATISFIES x.y END FROM _",
        "SELECT a FROM _ WHERE SOME x IN a SATISFIES EVERY y IN x SATISFIES y END END",
        "SELECT a COLLATE (UNICODE:fr NOCASE NODIAC) FROM _ ORDER BY a COLLATE NOCASE",
        "SELECT COUNT(DISTINCT a), count(*), Sum(a) FROM _ GROUP BY b, c HAVING count(*) > 1",
        "SELECT a FROM _ AS x INNER JOIN _ AS y ON x.a = y.b LEFT JOIN _ z ON z.c = y.c LEFT OUTER JOIN _ w ON w.d = 1 CROSS JOIN _ v",
        "SELECT u FROM _ AS d UNNEST d.list AS u UNNEST u.more",
        "SELECT 1.5e3, .5, 0.25E-2, 'it''s', \"dq\" FROM _",
        "SELECT a FROM _ WHERE a IN (1, 2) AND b NOT IN [3] AND c NOT LIKE 'x%' AND EXISTS d",
        "SELECT DISTINCT a FROM _",
        "SELECT a FROM tasks",
        "SELECT a FROM work.notes n",
        "SELECT meta().id, META().sequence, meta().revisionID, meta().expiration, meta().deleted, meta() FROM _",
    ]

    static let rejected: [(String, String)] = [
        ("", "expected SELECT at offset 0, found end of query"),
        ("SELEKT a FROM _", "expected SELECT at offset 0, found 'SELEKT'"),
        ("SELECT FROM _", "expected an expression at offset 7, found 'FROM'"),
        ("SELECT a", "expected ',' or FROM at offset 8, found end of query"),
        ("SELECT a FROM", "expected a collection name at offset 13, found end of query"),
        ("SELECT a FROM _ WHERE", "expected an expression at offset 21, found end of query"),
        ("SELECT a FROM _ WHERE a = ", "expected an expression at offset 26"),
        ("SELECT a FROM _ ORDER a", "expected BY at offset 22, found 'a'"),
        ("SELECT a FROM _ LIMIT 1 LIMIT 2", "expected end of query at offset 24, found 'LIMIT'"),
        (
            "SELECT a FROM _ garbage more",
            "expected a clause (WHERE, GROUP BY, ORDER BY, LIMIT …) or end of query at offset 24, found 'more'"
        ),
        ("SELECT (a FROM _", "expected ')' at offset 10, found 'FROM'"),
        ("SELECT [1, 2 FROM _", "expected ']' at offset 13, found 'FROM'"),
        ("SELECT ABS(1 FROM _", "expected ',' or ')' in the arguments of ABS() at offset 13, found 'FROM'"),
        ("SELECT 'open FROM _", "unterminated string at offset 7"),
        ("SELECT `open FROM _", "unterminated `identifier` at offset 7"),
        ("SELECT a # b FROM _", "unexpected character '#' at offset 9"),
        ("SELECT 12abc FROM _", "invalid number '12a' at offset 7"),
        ("SELECT a IS FROM _", "expected an expression at offset 12, found 'FROM'"),
        ("SELECT a BETWEEN 1 FROM _", "expected AND at offset 19, found 'FROM'"),
        ("SELECT CASE a END FROM _", "expected WHEN at offset 14, found 'END'"),
        ("SELECT ANY x a SATISFIES 1 END FROM _", "expected IN at offset 13, found 'a'"),
        ("SELECT ANY x IN a SATISFIES 1 FROM _", "expected END at offset 30, found 'FROM'"),
        ("SELECT a COLLATE LOUD FROM _", "expected a collation (UNICODE, NOCASE, NODIAC, CASE, DIAC) at offset 17, found 'LOUD'"),
        ("SELECT a FROM _ x JOIN _ y", "expected ON after INNER JOIN at offset 26, found end of query"),
        ("SELECT a FROM _ WHERE $ = 1", "expected a parameter name after '$' at offset 22"),
        ("SELECT a.* FROM _", "'a.*' does not name a FROM, JOIN or UNNEST alias"),
        ("SELECT a FROM _ WHERE b.*", "'b.*' is only allowed in the result list"),
        ("SELECT META(z).id FROM _", "META(z): 'z' is not a FROM or JOIN alias"),
        ("SELECT META().size FROM _", "META() has no property 'size'"),
        ("SELECT a FROM _ x JOIN _ x ON 1", "duplicate source alias 'x'"),
        ("SELECT a FROM _ LIMIT 'x'", "LIMIT must be an integer"),
        ("SELECT a FROM missing_collection", "no collection 'missing_collection' in database 'test' (FROM/JOIN at offset 14)"),
        ("SELECT a FROM _ JOIN ghosts ON 1", "no collection 'ghosts'"),
        ("SELECT a FROM _ WHERE x = 1 x", "found 'x'"),
    ]

    @Test func acceptedQueriesCompile() async throws {
        try await withDatabase { db, _ in
            _ = try await db.createCollection(name: "tasks")
            _ = try await db.createCollection(name: "notes", scope: "work")
            for sql in Self.accepted {
                #expect(throws: Never.self, "\(sql)") { _ = try db.createQuery(sql) }
            }
        }
    }

    @Test(arguments: rejected)
    func rejectedQueriesExplainWhy(_ sql: String, _ fragment: String) async throws {
        try await withDatabase { db, _ in
            let message = await expectCouchetteError(.invalidQuery) { _ = try db.createQuery(sql) }
            #expect(message?.contains(fragment) == true, "\(sql) → \(message ?? "nil")")
        }
    }

    @Test func closedDatabase() async throws {
        let directory = try TemporaryDirectory()
        let db = try directory.open()
        let query = try db.createQuery("SELECT a FROM _")
        try await db.close()
        await expectCouchetteError(.notOpen) { _ = try db.createQuery("SELECT a FROM _") }
        await expectCouchetteError(.notOpen) { _ = try await query.execute() }
    }

    @Test func deletedCollection() async throws {
        try await withDatabase { db, _ in
            _ = try await db.createCollection(name: "tmp")
            let query = try db.createQuery("SELECT a FROM tmp")
            try await db.deleteCollection(name: "tmp")
            await expectCouchetteError(.notOpen) { _ = try await query.execute() }
        }
    }
}
