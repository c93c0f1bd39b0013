import Foundation
import Testing

@testable import Couchette

/// `ORDER BY … LIMIT` over an index reads the documents it returns and no others: documents past
/// the limit — later in the last tie group, or in later groups — are damaged on disk, so reading
/// any of them would fail the query with `.corruption`.
@Suite struct IndexOrderLimitTests {
    /// Ten people, birthdays with ties: 1990 ×3 (a, b, c), 1991 ×3 (d, e, f), 1992 ×4 (g–j).
    private static let birthdays: [(String, String)] = [
        ("a", "1990"), ("b", "1990"), ("c", "1990"), ("d", "1991"), ("e", "1991"), ("f", "1991"),
        ("g", "1992"), ("h", "1992"), ("i", "1992"), ("j", "1992"),
    ]

    /// Overwrites the stored records of `ids` with a byte no record decodes from; returns the
    /// records as they were, for ``restore(_:in:of:)``.
    private func damage(_ ids: [String], in collection: Collection, of database: Database) throws -> [(String, [UInt8])] {
        let tables = database.core.environment.tables
        return try database.core.environment.write { txn in
            try ids.map { id in
                let key = StoreLayout.documentKey(collection.spec.number, id)
                let saved = try #require(try txn.getBytes(tables.documents, key: key))
                try txn.put(tables.documents, key: key, value: [0xFF])
                return (id, saved)
            }
        }
    }

    private func restore(_ records: [(String, [UInt8])], in collection: Collection, of database: Database) throws {
        let tables = database.core.environment.tables
        try database.core.environment.write { txn in
            for (id, bytes) in records {
                try txn.put(tables.documents, key: StoreLayout.documentKey(collection.spec.number, id), value: bytes)
            }
        }
    }

    @Test func anIndexOrderedLimitReadsOnlyTheRowsItReturns() async throws {
        try await withDatabase { database, _ in
            let people = try await database.createCollection(name: "people")
            try await database.inBatch { batch in
                for (id, year) in Self.birthdays {
                    try batch.save(document: MutableDocument(id: id, data: ["birthday": year, "name": id.uppercased()]), in: people)
                }
            }
            try await people.createIndex(withName: "by-birthday", config: ValueIndexConfiguration(["birthday"]))
            let select = "SELECT META().id AS id, name FROM people"
            // Each query, the rows it returns, and the documents it must not read.
            let cases: [(String, [String], [String])] = [
                // The limit falls inside the 1991 group: e is the last row, f must stay unread.
                ("\(select) WHERE birthday >= '1990' ORDER BY birthday LIMIT 5", ["a", "b", "c", "d", "e"], ["f", "g", "h", "i", "j"]),
                // A limit at the end of a group stops before the next one.
                ("\(select) WHERE birthday >= '1991' ORDER BY birthday LIMIT 3", ["d", "e", "f"], ["a", "b", "c", "g", "h", "i", "j"]),
                // OFFSET rows are read (and skipped), nothing after the window.
                (
                    "\(select) WHERE birthday >= '1991' ORDER BY birthday LIMIT 2 OFFSET 1", ["e", "f"],
                    ["a", "b", "c", "g", "h", "i", "j"]
                ),
                // Descending: groups from the last, each in id order (as a full scan's ties are).
                (
                    "\(select) WHERE birthday <= '1992' ORDER BY birthday DESC LIMIT 2", ["g", "h"],
                    ["a", "b", "c", "d", "e", "f", "i", "j"]
                ),
            ]
            for (sql, expected, _) in cases {
                #expect(try await database.createQuery(sql).execute().map { $0.string(forKey: "id") ?? "" } == expected, "\(sql)")
                #expect(try await database.createQuery(sql).explain().contains("IN INDEX ORDER"), "\(sql)")
            }
            // Damage, per case, every document the query must not read; the answers stay the same.
            for (sql, expected, unread) in cases {
                let saved = try damage(unread, in: people, of: database)
                let ids = try await database.createQuery(sql).execute().map { $0.string(forKey: "id") ?? "" }
                #expect(ids == expected, "\(sql)")
                // The damage is real: a query that reads those documents fails.
                await expectCouchetteError(.corruption) { _ = try await queryJSON(database, "\(select) ORDER BY birthday") }
                try restore(saved, in: people, of: database)
            }
        }
    }
}
