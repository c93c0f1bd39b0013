import Foundation
import Testing

@testable import Couchette

/// Queries read one snapshot, run on many tasks at once, and keep only what ORDER BY/LIMIT need.
@Suite struct QueryConcurrencyTests {
    @Test func everyExecutionSeesOneSnapshot() async throws {
        try await withDatabase { db, _ in
            let collection = try db.defaultCollection()
            let query = try db.createQuery("SELECT COUNT(*) AS n, SUM(v) AS total FROM _ AS a JOIN _ AS b ON meta(b).id = a.partner")
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask {
                    // Each batch adds two documents pointing at each other, in one transaction.
                    for index in 0..<40 {
                        try await db.inBatch { batch in
                            try batch.save(
                                document: MutableDocument(id: "a\(index)").setString("b\(index)", forKey: "partner").setInt(1, forKey: "v"),
                                in: collection)
                            try batch.save(
                                document: MutableDocument(id: "b\(index)").setString("a\(index)", forKey: "partner").setInt(1, forKey: "v"),
                                in: collection)
                        }
                    }
                }
                for _ in 0..<4 {
                    group.addTask {
                        for _ in 0..<25 {
                            let row = try #require(try await query.execute().allResults().first)
                            // Every document's partner is visible in the same snapshot: an even count.
                            #expect(row.int(forKey: "n") % 2 == 0)
                            #expect(row.int(forKey: "n") == row.int(forKey: "total"))
                        }
                    }
                }
                try await group.waitForAll()
            }
            #expect(try await query.execute().allResults().first?.int(forKey: "n") == 80)
        }
    }

    @Test func orderByWithLimitKeepsTheRightRows() async throws {
        try await withDatabase { db, _ in
            let ids = try await Fixtures.load("data/names_100.json", into: try db.defaultCollection(), in: db)
            let people = try Fixtures.documents("data/names_100.json")
            // Many ties (two genders): ties keep document order, with or without a LIMIT.
            let sorted = zip(ids, people).enumerated().sorted { a, b in
                let (x, y) = (a.element.1["gender"] as? String ?? "", b.element.1["gender"] as? String ?? "")
                return x != y ? x > y : a.offset < b.offset
            }.map(\.element.0)
            for (limit, offset) in [(10, 0), (7, 3), (1, 99), (100, 0), (5, 60)] {
                let rows = try await db.createQuery("SELECT meta().id FROM _ ORDER BY gender DESC LIMIT \(limit) OFFSET \(offset)")
                    .execute().map { $0.string(at: 0) ?? "" }
                #expect(rows == Array(sorted.dropFirst(offset).prefix(limit)), "LIMIT \(limit) OFFSET \(offset)")
            }
        }
    }

    @Test(arguments: [0, 1, 5, 64, 500])
    func topRowsKeepsTheSmallest(capacity: Int) {
        var generator = SystemRandomNumberGenerator()
        let values = (0..<300).map { _ in Int.random(in: 0..<50, using: &generator) }
        var top = TopRows<Int>(capacity: capacity, precedes: <)
        for value in values { top.insert(value) }
        #expect(top.sorted() == Array(values.sorted().prefix(capacity)))
        #expect(top.rows.count == min(capacity, values.count))
    }
}
