/// MATCH() and RANK() in the ``QueryCompiler``.
///
/// As in Couchbase Lite, MATCH may only be a term of the WHERE clause's top-level AND (never
/// under OR or NOT, nor outside WHERE), and names a full-text index of the FROM collection;
/// RANK(index) needs a MATCH on the same index. Every MATCH is answered by the main scan
/// (``FullTextScan``); a document reaching a MATCH another way (a live query checking a changed
/// document) is tokenized and matched on its own.
struct FullTextCompilation {
    struct Registered: Sendable {
        var offset: Int
        var slot: Int
        var name: String
        var index: CompiledIndex
        var search: Evaluator?
    }

    /// Finds a full-text index definition of a collection by name.
    typealias Lookup = (CollectionSpec, String) throws -> IndexDefinition?

    var lookup: Lookup?
    var matches: [Registered] = []

    static let placement = "MATCH can only appear at top-level, or in a top-level AND of the WHERE clause"
}

extension QueryCompiler {
    /// Registers the MATCH terms of WHERE's top-level AND (before anything is compiled).
    mutating func registerFullTextMatches(_ whereClause: Expression?, collection: CollectionSpec, alias: String) throws {
        guard let whereClause else { return }
        for conjunct in CompiledIndex.conjuncts(whereClause) {
            guard case .function(name: "MATCH", let arguments, _, _, let offset) = conjunct else { continue }
            guard arguments.count == 2 else {
                throw CouchetteError(
                    .invalidQuery, "MATCH() takes an index name and a search string, got \(arguments.count) arguments (offset \(offset))")
            }
            guard let lookup = fullText.lookup else { throw CouchetteError(.invalidQuery, FullTextCompilation.placement) }
            let name = try Self.indexName(arguments[0], alias: alias, function: "MATCH")
            guard let definition = try lookup(collection, name) else {
                throw CouchetteError(.invalidQuery, "MATCH: collection \(collection.fullName) has no index named '\(name)'")
            }
            guard definition.kind == .fullText else {
                throw CouchetteError(.invalidQuery, "MATCH: index '\(name)' is not a full-text index")
            }
            let index = try CompiledIndex(name: name, definition: definition, collection: collection)
            fullText.matches.append(.init(offset: offset, slot: fullText.matches.count, name: name, index: index))
        }
    }

    /// The index an argument names: `name`, `alias.name` or `'name'`.
    private static func indexName(_ argument: Expression, alias: String, function: String) throws -> String {
        switch argument {
        case .identifier(let name): return name
        case .member(.identifier(let base), let name) where base.lowercased() == alias.lowercased(): return name
        case .literal(.string(let name)): return name
        default: throw CouchetteError(.invalidQuery, "\(function)()'s first argument must be the name of a full-text index")
        }
    }

    /// MATCH or RANK compiled, or nil for any other function.
    mutating func compileFullTextFunction(_ name: String, _ arguments: [Expression], offset: Int) throws -> Evaluator? {
        switch name {
        case "MATCH":
            guard let position = fullText.matches.firstIndex(where: { $0.offset == offset }) else {
                throw CouchetteError(.invalidQuery, FullTextCompilation.placement + " (offset \(offset))")
            }
            let search = try compileExpression(arguments[1])
            fullText.matches[position].search = search
            let registered = fullText.matches[position]
            return { context in
                if context.fullTextMatched { return .bool(true) }
                guard let binding = context.sources[0] else { return nil }
                return .bool(try Self.matches(binding, registered, search, context))
            }
        case "RANK":
            guard arguments.count == 1 else {
                throw CouchetteError(
                    .invalidQuery, "RANK() takes the name of a full-text index, got \(arguments.count) arguments (offset \(offset))")
            }
            let indexName = try Self.indexName(arguments[0], alias: sources[0].alias, function: "RANK")
            guard let slot = fullText.matches.first(where: { $0.name == indexName })?.slot else {
                throw CouchetteError(
                    .invalidQuery, "RANK(\(indexName)) needs MATCH(\(indexName), …) in the WHERE clause (offset \(offset))")
            }
            return { context in
                guard context.fullTextMatched, slot < context.fullTextRanks.count else { return nil }
                return .double(context.fullTextRanks[slot])
            }
        default:
            return nil
        }
    }

    /// Decides a MATCH for one document by tokenizing it (no index read).
    private static func matches(
        _ binding: SourceBinding, _ registered: FullTextCompilation.Registered,
        _ search: @escaping Evaluator, _ context: EvaluationContext
    ) throws -> Bool {
        let match = FullTextMatch(slot: registered.slot, indexName: registered.name, search: search)
        let query = try FullTextScan.parse(match, registered.index, context)
        let tokenizer = try registered.index.makeTokenizer()
        guard let values = try registered.index.expressionValues(binding),
            let terms = CompiledIndex.fullTextTerms(values.map { $0?.string }, tokenizer: tokenizer)
        else { return false }
        let evaluator = FullTextEvaluator(
            source: DocumentPostings(document: terms),
            statistics: FullTextStore.Statistics(documents: 1, totalLength: UInt64(terms.length)))
        return !(try evaluator.evaluate(query).documents.isEmpty)
    }

    /// The main scan for a WHERE with MATCH terms (nil without): best first when the query is
    /// `ORDER BY RANK(index) DESC` with a LIMIT and nothing that needs every row.
    func fullTextScan(_ statement: SelectStatement, collection: CollectionSpec, aggregating: Bool) -> FullTextScan? {
        guard !fullText.matches.isEmpty, !sources[0].includeDeleted else { return nil }
        let matches = fullText.matches.compactMap { registered in
            registered.search.map { FullTextMatch(slot: registered.slot, indexName: registered.name, search: $0) }
        }
        var rankOrder: Int?
        if statement.orderBy.count == 1, statement.orderBy[0].descending, statement.joins.isEmpty, !aggregating,
            !statement.distinct, statement.limit != nil,
            case .function(name: "RANK", let arguments, _, _, _) = statement.orderBy[0].expression, arguments.count == 1,
            let name = try? Self.indexName(arguments[0], alias: sources[0].alias, function: "RANK")
        {
            rankOrder = fullText.matches.first { $0.name == name }?.slot
        }
        return FullTextScan(collection: collection, matches: matches, rankOrder: rankOrder)
    }
}
