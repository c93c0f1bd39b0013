import Foundation

/// An engine that answers the benchmark's queries (Couchette with SQL++, SQLite with
/// `json_extract`); raw LMDB has no query language and sits these workloads out.
public protocol QueryBenchmarkEngine: BenchmarkEngine {
    /// Creates the engine's index on one document path (a SQLite expression index on
    /// `json_extract`, a Couchette value index), as an application would for the queries it runs.
    func createIndex(_ name: String, path: BenchmarkQuery.Path) async throws
    /// Stores the orders (a second collection / table) in one transaction.
    func insertOrders(_ orders: [DocumentGenerator.GeneratedDocument]) async throws
    /// Prepares `query` once (a compiled query, a prepared statement) and returns a function
    /// that runs it with a parameter and returns its rows, each value as text.
    func prepare(_ query: BenchmarkQuery) throws -> (String?) async throws -> [[String]]
}

/// The queries of the query workloads, over documents from ``DocumentGenerator``.
public enum BenchmarkQuery: Sendable, CaseIterable {
    /// Find one person by e-mail (a value index).
    case pointLookup
    /// The 20 people born first on or after a date (an index, in index order).
    case rangeLimit
    /// People whose last name contains "an" (no index can help: a full scan).
    case likeScan
    /// Count and most visits per state.
    case groupBy
    /// Big orders with their buyer's last name (orders JOIN people on the person's id).
    case join

    public enum Path: String, Sendable {
        case email = "contact.email[0]"
        case birthday = "birthday"
    }
}

extension Workload {
    /// 10% as many orders as people (at least 50), each for a random person and amount (0..<1000).
    static func orders(people: Int) -> [DocumentGenerator.GeneratedDocument] {
        var random = SplitMix64(seed: 0x0DE2)
        return (0..<max(50, people / 10)).map { number in
            let person = DocumentGenerator.id(Int(random.next() % UInt64(max(1, people))))
            let amount = Int(random.next() % 1000)
            return DocumentGenerator.GeneratedDocument(
                id: String(format: "order-%06d", number),
                json: "{\"amount\":\(amount),\"person\":\"\(person)\"}")
        }
    }

    static let queries: [Workload] = [
        Workload(
            name: "index-point-lookup",
            summary: "find a person by e-mail with a value index: 2,000 e-mails looked up N/2 times in all (2,000 to 50,000; prepared)",
            needsQueries: true
        ) { engine, context in
            let documents = DocumentGenerator().documents(count: context.size)
            var random = SplitMix64(seed: 7)
            let distinct = (0..<2000).map { _ in email(of: documents[Int(random.next() % UInt64(documents.count))]) }
            let emails = (0..<pointLookups(size: context.size)).map { distinct[$0 % distinct.count] }
            return try await queryRuns(engine, context, documents, index: .email, query: .pointLookup, parameters: emails) { rows in
                rows.count == emails.count  // one person per e-mail
            }
        },
        Workload(
            name: "index-range-limit", summary: "birthday >= date ORDER BY birthday LIMIT 20 with an index, 500 queries",
            needsQueries: true
        ) { engine, context in
            let documents = DocumentGenerator().documents(count: context.size)
            var random = SplitMix64(seed: 8)
            let dates = (0..<500).map { _ in String(format: "%04d-%02d-01", 1950 + Int(random.next() % 50), 1 + Int(random.next() % 12)) }
            return try await queryRuns(engine, context, documents, index: .birthday, query: .rangeLimit, parameters: dates) { _ in true }
        },
        Workload(
            name: "like-scan", summary: "name.last LIKE '%an%' over every document (no index), 3 queries",
            needsQueries: true
        ) { engine, context in
            let documents = DocumentGenerator().documents(count: context.size)
            return try await queryRuns(engine, context, documents, index: nil, query: .likeScan, parameters: [nil, nil, nil]) { _ in true }
        },
        Workload(
            name: "group-by", summary: "COUNT(*) and MAX(visits) GROUP BY state over every document, 3 queries",
            needsQueries: true
        ) { engine, context in
            let documents = DocumentGenerator().documents(count: context.size)
            return try await queryRuns(engine, context, documents, index: nil, query: .groupBy, parameters: [nil, nil, nil]) { _ in true }
        },
        Workload(
            name: "join", summary: "orders (N/10) with amount >= 800 JOIN people ON the person's id, 3 queries",
            needsQueries: true
        ) { engine, context in
            let documents = DocumentGenerator().documents(count: context.size)
            return try await queryRuns(engine, context, documents, index: nil, query: .join, parameters: ["800", "800", "800"]) { _ in true
            }
        },
    ]

    /// How many lookups index-point-lookup times: N/2 within 2,000...50,000. Each takes a few
    /// microseconds, so 2,000 made a run of about 10 ms, whose ratio swung 1.3–3.1× between
    /// back-to-back runs of one binary; 50,000 at N = 100,000 make runs of a quarter to half a
    /// second, while small sizes (the smoke test, callgrind) stay quick. The same 2,000 e-mails
    /// are looked up over and over, so the pages read are those 2,000 lookups always read:
    /// 50,000 distinct ones spread over the whole file and measure SQLite's page cache instead
    /// (59.7 µs a lookup against Couchette's 13.1 µs under load).
    static func pointLookups(size: Int) -> Int { min(50_000, max(2_000, size / 2)) }

    private static func email(of document: DocumentGenerator.GeneratedDocument) -> String {
        let object = (try? JSONSerialization.jsonObject(with: Data(document.json.utf8))) as? [String: Any]
        return ((object?["contact"] as? [String: Any])?["email"] as? [String])?.first ?? ""
    }

    /// Loads people and orders (and the index) untimed, prepares the query, then times running it
    /// once per parameter, per run. The rows of the last run become the captured contents, so the
    /// smoke test can check that every engine answers alike.
    private static func queryRuns(
        _ engine: any BenchmarkEngine.Type, _ context: WorkloadContext,
        _ documents: [DocumentGenerator.GeneratedDocument], index: BenchmarkQuery.Path?,
        query: BenchmarkQuery, parameters: [String?],
        check: @escaping ([[String]]) -> Bool
    ) async throws -> WorkloadResult {
        let orders = orders(people: documents.count)
        var captured: [String: String] = [:]
        var result = try await onLoadedStore(
            engine, context, durable: false,
            load: { store in
                guard let store = store as? any QueryBenchmarkEngine else {
                    throw BenchmarkError.engine("\(engine.name) cannot run queries")
                }
                try await store.insertAll(documents)
                try await store.insertOrders(orders)
                if let index { try await store.createIndex("by-\(index)", path: index) }
            }
        ) { store in
            guard let store = store as? any QueryBenchmarkEngine else { throw BenchmarkError.engine("\(engine.name) cannot run queries") }
            let run = try store.prepare(query)
            var rows: [[String]] = []
            let seconds = try await time {
                for parameter in parameters { rows += try await run(parameter) }
            }
            guard !rows.isEmpty, check(rows) else {
                throw BenchmarkError.engine("\(engine.name) answered \(query) with \(rows.count) rows")
            }
            captured = Dictionary(
                rows.enumerated().map { ("result-\(String(format: "%07d", $0.offset))", $0.element.joined(separator: "\t")) },
                uniquingKeysWith: { a, _ in a })
            return Sample(seconds: seconds, ops: parameters.count)
        }
        if context.captureContents { result.contents = captured }
        return result
    }
}
