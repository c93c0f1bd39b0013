import Foundation

/// An engine with a full-text index: Couchette's (MATCH/RANK over LMDB) or SQLite's FTS5.
/// Both index the same sentences the same way (Unicode words, case-folded, accents kept, no
/// stemming or stop words) and rank with BM25 (k1 1.2, b 0.75).
public protocol FullTextBenchmarkEngine: BenchmarkEngine {
    /// Stores the sentences (id and text) in one transaction, unindexed.
    func insertSentences(_ sentences: [(id: String, text: String)]) async throws
    /// Builds the full-text index over every stored sentence.
    func createFullTextIndex() async throws
    /// Prepares "the 20 best sentences matching the search" and returns a function running it:
    /// rows of id and text, best first.
    func prepareFullTextSearch() throws -> (String) async throws -> [[String]]
}

/// Sentences of words drawn from a Zipf distribution (s = 1) over a vocabulary of 20,000
/// pronounceable made-up words: word frequencies like a natural language's, deterministic.
public struct SentenceGenerator: Sendable {
    public static let vocabularySize = 20_000
    private static let syllables = [
        "ka", "to", "ri", "mu", "se", "na", "lo", "pe", "di", "va", "zu", "ho", "gi", "be",
        "ta", "ne", "so", "ki", "ru", "ma", "li", "po", "de", "vi", "za", "ha", "go", "bu",
        "te", "ni", "sa", "ko", "re", "mi", "lu", "pa", "do", "ve", "zi", "he", "ga", "bo",
        "tu", "no", "su", "ke", "ro", "me", "la", "pi",
    ]
    public let words: [String]
    private let cumulative: [Double]

    public init() {
        words = (0..<Self.vocabularySize).map { rank in
            var number = rank, word = ""
            repeat {
                word += Self.syllables[number % Self.syllables.count]
                number /= Self.syllables.count
            } while number > 0 || word.count < 4
            return word
        }
        var total = 0.0
        cumulative = (1...Self.vocabularySize).map { rank in
            total += 1 / Double(rank)
            return total
        }
    }

    /// The word of a Zipf draw.
    private func word(_ random: inout SplitMix64) -> String {
        let target = Double(random.next() % 1_000_000_000) / 1_000_000_000 * cumulative[cumulative.count - 1]
        var low = 0, high = cumulative.count - 1
        while low < high {
            let middle = (low + high) / 2
            if cumulative[middle] < target { low = middle + 1 } else { high = middle }
        }
        return words[low]
    }

    /// `count` sentences of 6 to 30 words, ids `sentence-0000000`, ….
    public func sentences(count: Int) -> [(id: String, text: String)] {
        var random = SplitMix64(seed: 0xF75)
        return (0..<count).map { index in
            let length = 6 + Int(random.next() % 25)
            let text = (0..<length).map { _ in word(&random) }.joined(separator: " ")
            return (String(format: "sentence-%07d", index), text.prefix(1).uppercased() + text.dropFirst() + ".")
        }
    }

    /// Two-term searches: words ranked 5th to 300th in frequency, so that both rare and common
    /// pairs occur.
    public func searches(count: Int) -> [String] {
        var random = SplitMix64(seed: 0x5EA)
        return (0..<count).map { _ in
            "\(words[5 + Int(random.next() % 295)]) \(words[5 + Int(random.next() % 295)])"
        }
    }
}

extension Workload {
    static let fullText: [Workload] = [
        Workload(
            name: "fts-index", summary: "build a full-text index over N sentences (SQLite: FTS5 'rebuild')",
            needsQueries: true, runsOnce: true
        ) { engine, context in
            try await fullTextRun(engine, context) { store, _ in
                Sample(seconds: try await time { try await store.createFullTextIndex() }, ops: context.size)
            }
        },
        Workload(
            name: "fts-index-size", summary: "how much the full-text index of N sentences adds to the files",
            needsQueries: true, runsOnce: true
        ) { engine, context in
            try await fullTextRun(engine, context) { store, _ in
                let before = try store.diskSize()
                try await store.createFullTextIndex()
                let after = try store.diskSize()
                return Sample(seconds: 0, ops: context.size, bytes: after > before ? after - before : 0)
            }
        },
        Workload(
            name: "fts-query", summary: "two-term MATCH … ORDER BY RANK … LIMIT 20 over N sentences, 200 queries (prepared)",
            needsQueries: true
        ) { engine, context in
            let searches = SentenceGenerator().searches(count: 200)
            var samples: [Sample] = []
            var result = try await fullTextRun(engine, context) { store, search in
                try await store.createFullTextIndex()
                for _ in 0..<context.runs {
                    samples.append(
                        Sample(
                            seconds: try await time {
                                for text in searches { _ = try await search(text) }
                            }, ops: searches.count))
                }
                return samples[0]
            }
            result.samples = samples
            return result
        },
    ]

    /// Loads the sentences into a fresh store (untimed), runs `measure`, then captures the ids
    /// each of a few searches finds (sorted: ties in rank may come in either order), so the smoke
    /// test can check that both engines index and match alike.
    private static func fullTextRun(
        _ engine: any BenchmarkEngine.Type, _ context: WorkloadContext,
        _ measure: (any FullTextBenchmarkEngine, (String) async throws -> [[String]]) async throws -> Sample
    )
        async throws -> WorkloadResult
    {
        let generator = SentenceGenerator()
        let store = try await engine.init(directory: try freshFolder(context, 0), durable: false)
        guard let fullText = store as? any FullTextBenchmarkEngine else {
            throw BenchmarkError.engine("\(engine.name) has no full-text index")
        }
        try await fullText.insertSentences(generator.sentences(count: context.size))
        var prepared: ((String) async throws -> [[String]])?
        let search: (String) async throws -> [[String]] = { text in
            if prepared == nil { prepared = try fullText.prepareFullTextSearch() }
            return try await prepared!(text)
        }
        let sample = try await measure(fullText, search)
        var contents: [String: String] = [:]
        if context.captureContents {
            for (index, text) in (generator.searches(count: 5) + [generator.words[0], generator.words[3]]).enumerated() {
                let ids = try await search(text).map { $0[0] }.sorted()
                contents[String(format: "result-%03d", index)] = "\(text): " + ids.joined(separator: ",")
            }
        }
        prepared = nil  // finalizes SQLite's statement before the database closes
        try await store.close()
        return WorkloadResult(samples: [sample], contents: context.captureContents ? contents : nil)
    }
}
