import Foundation
import Testing

@testable import Couchette

/// Helpers for the SQL++ conformance suites (Couchbase Lite's semantics, class by class).
enum SQLPP {
    /// Saves `json` as document `id` of the default collection.
    static func save(_ db: Database, _ id: String, _ json: String) async throws {
        try await db.defaultCollection().save(document: MutableDocument(id: id, json: json))
    }

    /// The value of `expression` for the one document in the default collection, as JSON, or
    /// nil when it is MISSING.
    static func value(_ db: Database, _ expression: String) async throws -> String? {
        let rows = try await db.createQuery("SELECT \(expression) AS v FROM _").execute().allResults()
        try #require(rows.count == 1, "\(expression): \(rows.count) rows")
        let json = rows[0].toJSON()
        guard json != "{}" else { return nil }
        return String(json.dropFirst(5).dropLast())
    }

    /// Checks each `(expression, expected JSON or nil for MISSING)` against the one document.
    static func expect(
        _ db: Database, _ cases: [(String, String?)],
        sourceLocation: SourceLocation = #_sourceLocation
    ) async throws {
        for (expression, expected) in cases {
            let actual = try await value(db, expression)
            #expect(actual == expected, "\(expression)", sourceLocation: sourceLocation)
        }
    }

    /// The ids of the documents `condition` selects, in id order.
    static func ids(
        _ db: Database, from source: String = "_", where condition: String,
        parameters: Parameters? = nil
    ) async throws -> [String] {
        let query = try db.createQuery("SELECT META().id AS id FROM \(source) WHERE \(condition) ORDER BY META().id")
        query.parameters = parameters
        return try await query.execute().allResults().compactMap { $0.string(forKey: "id") }
    }
}
