import Foundation
import Testing

@testable import Couchette

/// MATCH through the full-text index against a brute-force matcher over the same random
/// documents and random search strings (seeded). Documents are written before and after the
/// index is created, then changed, deleted and purged, so both the build and the per-write
/// maintenance are compared. `COUCHETTE_STRESS=1` runs a larger variant.
@Suite struct FullTextEquivalenceTests {
    private static let vocabulary = [
        "apple", "applet", "apply", "band", "banana", "can", "candle", "cherry",
        "date", "elder", "fig", "grape", "honey", "kiwi", "lemon", "mango",
    ]

    /// A search and how the brute-force matcher decides it.
    private indirect enum Search {
        case word(String), prefix(String), phrase(String, String), near(String, String, Int)
        case and(Search, Search), implicitAnd(Search, Search), or(Search, Search), not(Search, Search)

        var text: String {
            switch self {
            case .word(let word): word
            case .prefix(let prefix): prefix + "*"
            case .phrase(let a, let b): "\"\(a) \(b)\""
            case .near(let a, let b, let distance): "\(a) NEAR/\(distance) \(b)"
            case .and(let a, let b): "(\(a.text)) AND (\(b.text))"
            case .implicitAnd(let a, let b): "(\(a.text)) (\(b.text))"
            case .or(let a, let b): "(\(a.text)) OR (\(b.text))"
            case .not(let a, let b): "(\(a.text)) NOT (\(b.text))"
            }
        }

        func matches(_ fields: [[String]]) -> Bool {
            switch self {
            case .word(let word): return fields.contains { $0.contains(word) }
            case .prefix(let prefix): return fields.contains { $0.contains { $0.hasPrefix(prefix) } }
            case .phrase(let a, let b):
                return fields.contains { field in field.indices.dropLast().contains { field[$0] == a && field[$0 + 1] == b } }
            case .near(let a, let b, let distance):
                return fields.contains { field in
                    field.indices.contains { i in
                        field[i] == a && field.indices.contains { j in field[j] == b && j != i && abs(j - i) - 1 <= distance }
                    }
                }
            case .and(let a, let b), .implicitAnd(let a, let b): return a.matches(fields) && b.matches(fields)
            case .or(let a, let b): return a.matches(fields) || b.matches(fields)
            case .not(let a, let b): return a.matches(fields) && !b.matches(fields)
            }
        }
    }

    private struct Generator: RandomNumberGenerator {
        var state: UInt64
        mutating func next() -> UInt64 {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return state ^ (state >> 29)
        }
    }

    private static func word(_ random: inout Generator) -> String { vocabulary.randomElement(using: &random)! }

    private static func search(_ random: inout Generator, depth: Int) -> Search {
        let leaf = depth == 0 || Int.random(in: 0..<3, using: &random) == 0
        if leaf {
            switch Int.random(in: 0..<4, using: &random) {
            case 0: return .prefix(String(word(&random).prefix(Int.random(in: 1...4, using: &random))))
            case 1: return .phrase(word(&random), word(&random))
            case 2: return .near(word(&random), word(&random), Int.random(in: 0...3, using: &random))
            default: return .word(word(&random))
            }
        }
        let a = search(&random, depth: depth - 1), b = search(&random, depth: depth - 1)
        switch Int.random(in: 0..<4, using: &random) {
        case 0: return .and(a, b)
        case 1: return .implicitAnd(a, b)
        case 2: return .or(a, b)
        default: return .not(a, b)
        }
    }

    private static func text(_ random: inout Generator) -> [String] {
        (0..<Int.random(in: 0...12, using: &random)).map { _ in word(&random) }
    }

    @Test func indexAgreesWithBruteForce() async throws {
        let stress = ProcessInfo.processInfo.environment["COUCHETTE_STRESS"] == "1"
        try await compare(seed: 23, documents: stress ? 3_000 : 150, searches: stress ? 2_000 : 150, changes: stress ? 1_500 : 80)
    }

    private func compare(seed: UInt64, documents count: Int, searches: Int, changes: Int) async throws {
        var random = Generator(state: seed)
        try await withDatabase { db, _ in
            let collection = try db.defaultCollection()
            var fields: [String: [[String]]] = [:]
            func save(_ id: String) async throws {
                let value = [Self.text(&random), Self.text(&random)]
                fields[id] = value
                let document = MutableDocument(id: id).setString(value[0].joined(separator: " "), forKey: "a")
                if !value[1].isEmpty { document.setString(value[1].joined(separator: ", "), forKey: "b") }
                try await collection.save(document: document)
            }
            for index in 0..<count / 2 { try await save("d\(index)") }
            try await collection.createIndex(withName: "words", config: FullTextIndexConfiguration(["a", "b"]))
            for index in count / 2..<count { try await save("d\(index)") }
            for _ in 0..<changes {
                let id = "d\(Int.random(in: 0..<count, using: &random))"
                switch Int.random(in: 0..<4, using: &random) {
                case 0:
                    if let document = try await collection.document(id: id) {
                        try await collection.delete(document: document)
                        fields[id] = nil
                    }
                case 1:
                    if fields[id] != nil {
                        try await collection.purge(id: id)
                        fields[id] = nil
                    }
                default:
                    try await save(id)
                }
            }
            let query = try db.createQuery("SELECT meta().id AS id FROM _ WHERE MATCH(words, $q)")
            for _ in 0..<searches {
                let search = Self.search(&random, depth: 3)
                query.parameters = Parameters().setString(search.text, forName: "q")
                let found = Set(try await query.execute().compactMap { $0.string(forKey: "id") })
                let expected = Set(fields.filter { search.matches($0.value) }.keys)
                #expect(found == expected, "\(search.text)")
                if found != expected { return }
            }
        }
    }
}
