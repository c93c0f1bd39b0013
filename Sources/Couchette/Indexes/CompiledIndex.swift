/// An ``IndexDefinition`` compiled for one collection: the evaluators that compute a document's
/// entry keys, and the canonical keys the planner matches query expressions against.
final class CompiledIndex: Sendable {
    let name: String
    let collection: CollectionSpec
    let definition: IndexDefinition
    /// The key prefix of the index's entries (``StoreLayout/indexEntriesPrefix(_:)``), made once.
    let entriesPrefix: [UInt8]
    /// Column evaluators: on the document (value index) or on each array member (array index).
    private let columns: [Evaluator]
    private let columnCount: Int
    private let filter: Evaluator?
    private let arrayPath: Evaluator?
    private let documentVariables: Int
    private let memberVariables: Int
    /// The planner's view of each column (nil: no query expression can match it).
    let columnKeys: [String?]
    /// The array's path key for an array index.
    let pathKey: String?
    /// The partial index's condition, split at AND; nil when a conjunct has no key (never usable).
    let whereKeys: [String]?
    /// A full-text index's Snowball algorithm (nil: no stemming).
    let fullTextAlgorithm: String?

    static let documentAlias = " document"

    init(name: String, definition: IndexDefinition, collection: CollectionSpec) throws {
        self.name = name
        self.definition = definition
        self.collection = collection
        entriesPrefix = StoreLayout.indexEntriesPrefix(definition.number)
        func parse(_ text: String, _ role: String) throws -> Expression {
            do {
                return try Parser.parseExpression(text)
            } catch let error as CouchetteError {
                throw CouchetteError(.invalidQuery, "index '\(name)': invalid \(role) '\(text)': \(error.message)")
            }
        }
        let expressions = try definition.expressions.map { try parse($0, "expression") }
        let condition = try definition.whereClause.map { try parse($0, "where condition") }
        let path = try definition.path.map { try parse($0, "array path") }
        if let text = definition.path, text.contains("[]") {
            throw CouchetteError(.invalidQuery, "index '\(name)': nested array paths ('\(text)') are not supported; index one array level")
        }

        let property: (String) -> ExpressionKey.Root = { _ in .property }
        let isFullText = definition.kind == .fullText
        fullTextAlgorithm = isFullText ? try SnowballStemmer.algorithm(forLanguage: definition.language) : nil
        // A full-text index answers MATCH only: no column or condition key, so the planner never picks it.
        columnKeys =
            isFullText
            ? expressions.map { _ in nil }
            : definition.kind == .array && expressions.isEmpty
                ? [""] : expressions.map { ExpressionKey.make($0, resolve: property)?.text }
        columnCount = columnKeys.count
        pathKey = path.flatMap { ExpressionKey.make($0, resolve: property)?.text }
        if isFullText {
            whereKeys = nil
        } else if let condition {
            let keys = Self.conjuncts(condition).map { ExpressionKey.make($0, resolve: property)?.text }
            whereKeys = keys.contains(nil) ? nil : keys.compactMap { $0 }
        } else {
            whereKeys = []
        }

        // The document-level part: value columns (or the array path) and the condition.
        let documentResults = definition.kind != .array ? expressions : (path.map { [$0] } ?? [])
        let documentPlan = try Self.compile(documentResults, condition, collection, name)
        filter = documentPlan.filter
        documentVariables = documentPlan.variableCount
        if definition.kind != .array {
            columns = documentPlan.columns
            arrayPath = nil
            memberVariables = 0
        } else {
            arrayPath = documentPlan.columns.first
            if expressions.isEmpty {
                columns = [{ context in context.sources[0]?.body }]
                memberVariables = 0
            } else {
                let memberPlan = try Self.compile(expressions, nil, collection, name)
                columns = memberPlan.columns
                memberVariables = memberPlan.variableCount
            }
        }
    }

    private static func compile(
        _ results: [Expression], _ condition: Expression?, _ collection: CollectionSpec,
        _ name: String
    ) throws -> QueryPlan {
        var statement = SelectStatement(from: DataSource(path: [collection.scope, collection.name], alias: documentAlias, offset: 0))
        statement.results = results.map { ResultItem(kind: .expression($0), alias: nil) }
        if statement.results.isEmpty { statement.results = [ResultItem(kind: .star, alias: nil)] }
        statement.whereClause = condition
        let plan: QueryPlan
        do {
            plan = try QueryCompiler.compile(statement, databaseName: "") { _, _ in collection }
        } catch let error as CouchetteError {
            throw CouchetteError(.invalidQuery, "index '\(name)': \(error.message)")
        }
        if plan.isAggregating {
            throw CouchetteError(.invalidQuery, "index '\(name)': aggregate functions cannot be indexed")
        }
        if let parameter = plan.parameterNames.sorted().first {
            throw CouchetteError(.invalidQuery, "index '\(name)': an index cannot use the query parameter $\(parameter)")
        }
        return plan
    }

    static func conjuncts(_ expression: Expression) -> [Expression] {
        if case .binary(.and, let a, let b) = expression { return conjuncts(a) + conjuncts(b) }
        return [expression]
    }

    var isArray: Bool { definition.kind == .array }

    /// The encoded (and possibly truncated) tuples of one stored document: none when it is deleted,
    /// fails the partial condition, or its first column is MISSING; one per distinct member tuple
    /// for an array index.
    func entryKeys(id: String, record: DocumentRecord) throws -> Set<[UInt8]> {
        guard let context = try documentContext(id: id, record: record) else { return [] }
        guard let arrayPath else { return tuple(context).map { [$0] } ?? [] }
        // The rows UNNEST makes of the value (a scalar is one member), so an array index serves
        // UNNEST queries whatever the value; ANY over a scalar is false, and the query's own
        // condition, evaluated on every candidate, drops such a document again.
        let value = try arrayPath(context)
        let members = definition.entriesAreCurrent ? Operators.unnested(value) : Operators.members(value)
        guard !members.isEmpty else { return [] }
        let memberContext = EvaluationContext(sourceCount: 1, variableCount: memberVariables, parameters: [:])
        var keys: Set<[UInt8]> = []
        for member in members {
            memberContext.sources[0] = .element(member)
            if let key = tuple(memberContext) { keys.insert(key) }
        }
        return keys
    }

    /// The evaluation context of a stored document, or nil when it is deleted or fails the
    /// partial condition.
    private func documentContext(id: String, record: DocumentRecord) throws -> EvaluationContext? {
        guard !record.isDeleted else { return nil }
        return try documentContext(
            SourceBinding(
                id: id, sequence: record.sequence, revision: record.revision, isDeleted: false,
                expiration: record.expiration, body: Datum(EncodedValue(bytes: record.body))))
    }

    private func documentContext(_ binding: SourceBinding) throws -> EvaluationContext? {
        let context = EvaluationContext(sourceCount: 1, variableCount: documentVariables, parameters: [:])
        context.sources[0] = binding
        if let filter {
            guard let result = try filter(context), !result.isNull, result.isTruthy else { return nil }
        }
        return context
    }

    /// The values of a full-text index's expressions for a stored document (nil when it is
    /// deleted or fails the partial condition).
    func expressionValues(id: String, record: DocumentRecord) throws -> [Datum?]? {
        guard !record.isDeleted else { return nil }
        return try expressionValues(
            SourceBinding(
                id: id, sequence: record.sequence, revision: record.revision, isDeleted: false,
                expiration: record.expiration, body: Datum(EncodedValue(bytes: record.body))))
    }

    /// The same for a document a query is looking at.
    func expressionValues(_ binding: SourceBinding) throws -> [Datum?]? {
        guard !binding.isDeleted, let context = try documentContext(binding) else { return nil }
        return columns.map { column in (try? column(context)) ?? nil }
    }

    private func tuple(_ context: EvaluationContext) -> [UInt8]? {
        var bytes: [UInt8] = []
        for (position, column) in columns.enumerated() {
            let value = (try? column(context)) ?? nil
            if position == 0 && value == nil { return nil }
            IndexKey.append(value, to: &bytes)
        }
        return IndexKey.truncated(bytes)
    }

    var columnsCount: Int { columnCount }
}
