import Foundation
import Testing

@testable import Couchette

/// Thousands of generated queries run over the same generated documents in two databases, one
/// with indexes and one without: the results (rows and their order) must be identical.
/// `COUCHETTE_STRESS=1` runs many more queries over more documents.
@Suite(.tags(.sanitizeAddress, .sanitizeAddress)) struct IndexEquivalenceTests {
    typealias Generator = ValueEncodingTests.SeededGenerator

    static let stress = ProcessInfo.processInfo.environment["COUCHETTE_STRESS"] == "1"

    /// Values of every type, with int/double twins (2 and 2.0), strings sharing prefixes, and
    /// containers; MISSING is `nil`.
    static var pool: [Any?] {
        [
            nil, NSNull(), true, false, -3, 0, 1, 2, 2.0, 2.5, 3, 7, -0.5, 10, 1e3,
            "", "a", "ab", "abc", "abd", "b", "B", "ba", "name", "na%me", "Zed",
            [1, 2], [1], ["a"], [2.0, "x"], ["k": 1], ["k": "v", "j": 2],
            // Integers that one Double stands for, and strings longer than an index key can hold.
            9_007_199_254_740_993, 9_007_199_254_740_992.0, 9_007_199_254_740_992,
            String(repeating: "ab", count: 300) + "a", String(repeating: "ab", count: 300) + "b", String(repeating: "ab", count: 300),
        ]
    }

    static func literal(_ value: Any?) -> String {
        switch value {
        case nil: return "MISSING"
        case is NSNull: return "null"
        case let flag as Bool: return flag ? "true" : "false"
        case let number as Int: return String(number)
        case let number as Double: return number == number.rounded() && abs(number) < 1e6 ? String(format: "%.1f", number) : String(number)
        case let text as String: return "'" + text.replacingOccurrences(of: "'", with: "''") + "'"
        case let array as [Any]: return "[" + array.map(literal).joined(separator: ", ") + "]"
        case let object as [String: Any]:
            return "{" + object.keys.sorted().map { "\"\($0)\": \(literal(object[$0]))" }.joined(separator: ", ") + "}"
        default: return "null"
        }
    }

    static func randomValue(_ random: inout Generator) -> Any? {
        pool[Int.random(in: 0..<pool.count, using: &random)]
    }

    static func scalar(_ random: inout Generator) -> Any? {
        // Mostly scalars, so ranges have something to find.
        let scalars = pool.filter { !($0 is [Any]) && !($0 is [String: Any]) }
        return Int.random(in: 0..<10, using: &random) == 0
            ? randomValue(&random) : scalars[Int.random(in: 0..<scalars.count, using: &random)]
    }

    static func document(_ number: Int, _ random: inout Generator) -> MutableDocument {
        let doc = MutableDocument(id: String(format: "d%04d", number))
        for field in ["a", "b", "s"] {
            let value: Any?
            switch field {
            case "b": value = Int.random(in: 0..<8, using: &random) == 0 ? randomValue(&random) : Int.random(in: 0..<4, using: &random)
            case "s":
                value =
                    Int.random(in: 0..<6, using: &random) == 0
                    ? randomValue(&random)
                    : ["a", "ab", "abc", "abd", "b", "ba", "bab", "c", "na%me", "name"][Int.random(in: 0..<10, using: &random)]
            default: value = randomValue(&random)
            }
            if let value { doc.setValue(value, forKey: field) }
        }
        switch Int.random(in: 0..<6, using: &random) {
        case 0: break
        case 1: doc.setValue(randomValue(&random) ?? NSNull(), forKey: "tags")
        default: doc.setValue((0..<Int.random(in: 0...3, using: &random)).map { _ in scalar(&random) ?? NSNull() }, forKey: "tags")
        }
        return doc
    }

    static var indexes: [(String, any IndexConfiguration)] {
        [
            ("byA", ValueIndexConfiguration(["a"])),
            ("byS", ValueIndexConfiguration(["s"])),
            ("byBA", ValueIndexConfiguration(["b", "a"])),
            ("bySB", ValueIndexConfiguration(["s", "b"])),
            ("aWhenB1", ValueIndexConfiguration(["a"], where: "b = 1")),
            ("byTag", ArrayIndexConfiguration(path: "tags")),
        ]
    }

    static func condition(_ random: inout Generator, depth: Int = 0) -> String {
        if depth < 2, Int.random(in: 0..<3, using: &random) == 0 {
            let op = Bool.random(using: &random) ? "AND" : "OR"
            return "(\(condition(&random, depth: depth + 1)) \(op) \(condition(&random, depth: depth + 1)))"
        }
        let field = ["a", "b", "s", "d.a", "d.s"][Int.random(in: 0..<5, using: &random)]
        let value = literal(scalar(&random))
        switch Int.random(in: 0..<15, using: &random) {
        case 0, 1: return "\(field) = \(value)"
        case 2: return "\(field) < \(value)"
        case 3: return "\(field) <= \(value)"
        case 4: return "\(value) < \(field)"
        case 5: return "\(field) >= \(value)"
        case 6: return "\(field) IN [\(value), \(literal(scalar(&random))), \(literal(scalar(&random)))]"
        case 7: return "\(field) BETWEEN \(value) AND \(literal(scalar(&random)))"
        case 8: return "\(field) LIKE '\(["a", "ab", "b", "n", "na%", "A", "ab_"][Int.random(in: 0..<7, using: &random)])%'"
        case 9:
            return
                "\(field) IS \(["NULL", "MISSING", "VALUED", "NOT NULL", "NOT MISSING", "NOT VALUED"][Int.random(in: 0..<6, using: &random)])"
        case 10: return "ANY t IN tags SATISFIES t \(["=", "<", ">="][Int.random(in: 0..<3, using: &random)]) \(value) END"
        case 11:
            return "b = \(Int.random(in: 0..<4, using: &random)) AND a \(["<", ">", "="][Int.random(in: 0..<3, using: &random)]) \(value)"
        case 12: return "\(field) = \(value) COLLATE NOCASE"
        case 13: return "\(field) IS \(value)"
        default: return "NOT (\(field) = \(value))"
        }
    }

    static func query(_ random: inout Generator) -> String {
        if Int.random(in: 0..<15, using: &random) == 0 {
            let value = literal(scalar(&random))
            return "SELECT META(d).id AS id, t FROM docs AS d UNNEST d.tags AS t WHERE t = \(value) OR t > \(value)"
        }
        var sql = "SELECT META(d).id AS id, d.a, d.b, d.s FROM docs AS d WHERE \(condition(&random))"
        if Int.random(in: 0..<3, using: &random) > 0 {
            let keys = [["a"], ["s"], ["b"], ["b", "a"], ["s", "b"], ["META(d).id"]][Int.random(in: 0..<6, using: &random)]
            let direction = Bool.random(using: &random) ? " DESC" : ""
            sql += " ORDER BY " + keys.map { $0 + direction }.joined(separator: ", ")
            if Int.random(in: 0..<4, using: &random) > 0 {
                sql += " LIMIT \(Int.random(in: 0...12, using: &random))"
                if Bool.random(using: &random) { sql += " OFFSET \(Int.random(in: 0...5, using: &random))" }
            }
        } else if Int.random(in: 0..<4, using: &random) == 0 {
            sql += " LIMIT \(Int.random(in: 1...10, using: &random))"
        }
        return sql
    }

    @Test func randomQueriesGiveTheSameResultsWithAndWithoutIndexes() async throws {
        try await onAThreadOfItsOwn {
            let directory = try TemporaryDirectory()
            let indexed = try directory.open("indexed"), plain = try directory.open("plain")
            var random = Generator(seed: 0x1DE7)
            let documentCount = Self.stress ? 400 : 60
            let queryCount = Self.stress ? 10_000 : 2_000
            let indexedDocs = try await indexed.createCollection(name: "docs")
            let plainDocs = try await plain.createCollection(name: "docs")
            // Half the documents before the indexes exist (built at creation), half after (maintained),
            // then some updated and deleted.
            var documents = (0..<documentCount).map { Self.document($0, &random) }
            func saveAll(_ docs: ArraySlice<MutableDocument>) async throws {
                try await indexed.inBatch { batch in for doc in docs { try batch.save(document: doc, in: indexedDocs) } }
                try await plain.inBatch { batch in for doc in docs { try batch.save(document: doc.toMutable(), in: plainDocs) } }
            }
            try await saveAll(documents[..<(documentCount / 2)])
            for (name, config) in Self.indexes { try await indexedDocs.createIndex(withName: name, config: config) }
            try await saveAll(documents[(documentCount / 2)...])
            for _ in 0..<(documentCount / 5) {
                let number = Int.random(in: 0..<documentCount, using: &random)
                if Bool.random(using: &random) {
                    documents[number] = Self.document(number, &random)
                    try await indexedDocs.save(document: documents[number])
                    try await plainDocs.save(document: documents[number].toMutable())
                } else if let doc = try await indexedDocs.document(id: documents[number].id) {
                    try await indexedDocs.delete(document: doc)
                    try await plainDocs.delete(document: try #require(try await plainDocs.document(id: doc.id)))
                }
            }

            var usedIndex = 0, failures = 0
            for _ in 0..<queryCount {
                let sql = Self.query(&random)
                let withIndexes = try indexed.createQuery(sql), withoutIndexes = try plain.createQuery(sql)
                if try await withIndexes.explain().hasPrefix("INDEX") { usedIndex += 1 }
                let expected = try await withoutIndexes.execute().map { $0.toJSON() }
                let actual = try await withIndexes.execute().map { $0.toJSON() }
                if actual != expected {
                    failures += 1
                    if failures <= 5 {
                        Issue.record("\(sql)\n\(try await withIndexes.explain())\nindexed: \(actual)\nfull scan: \(expected)")
                    }
                }
                await Task.yield()
            }
            #expect(failures == 0)
            #expect(usedIndex > queryCount / 3, "only \(usedIndex) of \(queryCount) queries used an index")
            try await indexed.close()
            try await plain.close()
        }
    }
}
