/// One `MATCH(index, search)` of a WHERE clause's top-level AND.
struct FullTextMatch: Sendable {
    /// Where ``EvaluationContext/fullTextRanks`` keeps this MATCH's score.
    var slot: Int
    var indexName: String
    /// The search string (a constant or a `$parameter`).
    var search: Evaluator
}

/// The main scan of a query whose WHERE has MATCH conjuncts: each MATCH is evaluated on its
/// full-text index, their documents intersected, and only those documents are read.
///
/// Without ORDER BY, documents come in id order (as from a full scan). With `ORDER BY
/// RANK(index) DESC` and a LIMIT (and nothing that needs every row: no JOIN, grouping or
/// DISTINCT), they come best first, ties in id order, and the scan stops once the executor has
/// its rows: only those documents are read.
struct FullTextScan: DocumentScan {
    let collection: CollectionSpec
    let matches: [FullTextMatch]
    /// The slot whose score orders the rows (best first), or nil for id order.
    let rankOrder: Int?

    var description: String {
        "FULL-TEXT SCAN \(collection.fullName) USING " + matches.map(\.indexName).joined(separator: " AND ")
    }

    func explain(_ snapshot: StoreSnapshot, context: EvaluationContext) throws -> String {
        let indexes = try snapshot.indexes(collection, readyOnly: true)
        let parts = matches.map { match -> String in
            let summary = indexes.first { $0.name == match.indexName }?.definition.summary ?? "(missing)"
            let search = (try? match.search(context)).flatMap { $0?.string }.map { " MATCH \(JSON.string(from: .string($0)))" } ?? ""
            return "\(match.indexName) \(summary)\(search)"
        }
        return "FULL-TEXT SCAN \(collection.fullName) USING " + parts.joined(separator: " AND ")
            + (rankOrder != nil ? " (best first)" : "")
    }

    /// The documents every MATCH finds, with one score per slot.
    private func hits(_ snapshot: StoreSnapshot, _ context: EvaluationContext) throws -> (documents: [UInt64], scores: [[Double]]) {
        let indexes = try snapshot.indexes(collection, readyOnly: true)
        var documents: [UInt64] = []
        var scores = Array(repeating: [Double](), count: (matches.map(\.slot).max() ?? 0) + 1)
        for (position, match) in matches.enumerated() {
            guard let index = indexes.first(where: { $0.name == match.indexName && $0.definition.kind == .fullText }) else {
                throw CouchetteError(
                    .invalidQuery,
                    "MATCH: collection \(collection.fullName) has no full-text index '\(match.indexName)' (deleted, or still being built)")
            }
            let found = try snapshot.fullTextSearch(index, try Self.parse(match, index, context))
            if position == 0 {
                documents = found.documents
                scores[match.slot] = found.scores
                continue
            }
            // Keep the documents both have, and every slot's scores for them.
            var kept: [Int] = [], keptFound: [Int] = []
            var i = 0, j = 0
            while i < documents.count && j < found.documents.count {
                if documents[i] < found.documents[j] {
                    i += 1
                } else if found.documents[j] < documents[i] {
                    j += 1
                } else {
                    kept.append(i); keptFound.append(j); i += 1; j += 1
                }
            }
            documents = kept.map { documents[$0] }
            for slot in scores.indices where !scores[slot].isEmpty || slot == match.slot {
                scores[slot] = slot == match.slot ? keptFound.map { found.scores[$0] } : kept.map { scores[slot][$0] }
            }
        }
        return (documents, scores)
    }

    /// The parsed search string of `match` for this execution.
    static func parse(_ match: FullTextMatch, _ index: CompiledIndex, _ context: EvaluationContext) throws -> FullTextQuery {
        guard case .string(let text)? = try match.search(context) else {
            throw CouchetteError(.invalidQuery, "MATCH(\(match.indexName), …): the search string must be a string")
        }
        return try FullTextQuery.parse(text, tokenizer: try index.makeTokenizer())
    }

    func forEach(
        _ snapshot: StoreSnapshot, now: UInt64, context: EvaluationContext,
        order: ScanOrder, isSatisfied: () -> Bool, filter: BodyFilter?, _ body: (SourceBinding) throws -> Bool
    ) throws {
        let (documents, scores) = try hits(snapshot, context)
        func binding(_ index: Int) throws -> SourceBinding? {
            let sequence = documents[index]
            guard let id = try snapshot.liveDocumentID(collection, sequence: sequence),
                let found = try CollectionScan.lookup(snapshot, collection, id, now: now, includeDeleted: false),
                found.sequence == sequence
            else { return nil }
            return found
        }
        context.fullTextMatched = true
        context.fullTextRanks = Array(repeating: 0, count: scores.count)
        defer { context.fullTextMatched = false }
        func emit(_ group: [Int]) throws -> Bool {
            var rows: [(Int, SourceBinding)] = []
            for index in group { if let found = try binding(index) { rows.append((index, found)) } }
            rows.sort { $0.1.id.utf8.lexicographicallyPrecedes($1.1.id.utf8) }
            for (index, row) in rows {
                for slot in scores.indices where index < scores[slot].count { context.fullTextRanks[slot] = scores[slot][index] }
                if try !body(row) { return false }
            }
            return true
        }
        guard let rankOrder, rankOrder < scores.count else {
            _ = try emit(Array(documents.indices))
            return
        }
        order.inOrder = true
        let ranked = documents.indices.sorted { scores[rankOrder][$0] > scores[rankOrder][$1] }
        var start = 0
        while start < ranked.count {
            var end = start + 1
            while end < ranked.count && scores[rankOrder][ranked[end]] == scores[rankOrder][ranked[start]] { end += 1 }
            guard try emit(Array(ranked[start..<end])) else { return }
            if isSatisfied() { return }
            start = end
        }
    }
}
