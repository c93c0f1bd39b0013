import Foundation
import Testing

@testable import Couchette

/// ORDER BY a path that a result column already reads takes the column's value, and only then:
/// a path whose root is a result alias means something else in ORDER BY than in that alias's
/// own column, and keeps its own evaluation.
@Suite struct OrderKeyReuseTests {
    @Test func orderByAColumnsPathSortsByThatPath() async throws {
        try await withDatabase { database, _ in
            let collection = try database.defaultCollection()
            try await collection.save(document: MutableDocument(id: "d1", data: ["b": 3, "x": ["y": ["y": 3]]]))
            try await collection.save(document: MutableDocument(id: "d2", data: ["b": 1, "x": ["y": ["y": 1, "z": 0]]]))
            try await collection.save(document: MutableDocument(id: "d3", data: ["b": 2, "x": ["y": ["y": 2]]]))
            func ids(_ sql: String) async throws -> [String] {
                try await database.createQuery(sql).execute().map { $0.string(forKey: "id") ?? "" }
            }
            #expect(try await ids("SELECT META().id AS id, b FROM _ ORDER BY b") == ["d2", "d3", "d1"])
            #expect(try await ids("SELECT META().id AS id, b FROM _ ORDER BY b DESC LIMIT 2") == ["d1", "d3"])
            // `x` is an alias of x.y: ORDER BY x.y is x.y.y (1, 2, 3), not the column's objects
            // (which would sort d1 and d3, one key each, before d2).
            #expect(try await ids("SELECT META().id AS id, x.y AS x FROM _ ORDER BY x.y") == ["d2", "d3", "d1"])
        }
    }
}
