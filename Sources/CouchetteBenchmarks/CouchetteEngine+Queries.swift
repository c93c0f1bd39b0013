import Couchette
import Foundation

/// The query workloads through Couchette's public API: value indexes, SQL++ compiled once,
/// parameters assigned per execution.
extension CouchetteEngine: QueryBenchmarkEngine {
    public func createIndex(_ name: String, path: BenchmarkQuery.Path) async throws {
        try await collection.createIndex(withName: name, config: ValueIndexConfiguration([path.rawValue]))
    }

    public func insertOrders(_ orders: [DocumentGenerator.GeneratedDocument]) async throws {
        let prepared = try orders.map { try MutableDocument(id: $0.id, json: $0.json) }
        let collection = try await database.createCollection(name: "orders")
        try await database.inBatch { batch in
            for order in prepared { try batch.save(document: order, in: collection) }
        }
    }

    public func prepare(_ query: BenchmarkQuery) throws -> (String?) async throws -> [[String]] {
        let text: String
        switch query {
        case .pointLookup:
            text = "SELECT META().id AS id, name.first AS first FROM _ WHERE contact.email[0] = $value"
        case .rangeLimit:
            text = "SELECT META().id AS id, birthday FROM _ WHERE birthday >= $value ORDER BY birthday LIMIT 20"
        case .likeScan:
            text = "SELECT META().id AS id FROM _ WHERE name.last LIKE '%an%'"
        case .groupBy:
            text = """
                SELECT contact.address.state AS state, COUNT(*) AS n, MAX(visits) AS most FROM _
                GROUP BY contact.address.state ORDER BY contact.address.state
                """
        case .join:
            text =
                "SELECT META(o).id AS id, p.name.last AS last FROM orders AS o JOIN _ AS p ON META(p).id = o.person WHERE o.amount >= $value"
        }
        let compiled = try database.createQuery(text)
        return { value in
            if let value {
                compiled.parameters =
                    Int(value).map { Parameters().setInt($0, forName: "value") }
                    ?? Parameters().setString(value, forName: "value")
            }
            return try await compiled.execute().map { row in
                (0..<row.count).map { column in row.string(at: column) ?? String(row.int(at: column)) }
            }
        }
    }
}
