/// Turns a parsed ``SelectStatement`` into a ``QueryPlan``: resolves collections and names,
/// assigns slots to ANY/EVERY variables and aggregates, names the result columns, and builds the
/// tree of ``Evaluator`` closures.
///
/// Name resolution, for a path `a.b.c`: an ANY/EVERY variable `a`; else a FROM/JOIN/UNNEST alias
/// `a` (case-insensitive, as in Couchbase Lite), or `scope.collection` for an unaliased source;
/// else (outside the result list) a result alias `a`; else the property `a.b.c` of the main
/// (FROM) document.
struct QueryCompiler {
    typealias CollectionLookup = (_ scope: String, _ name: String) throws -> CollectionSpec?

    private let databaseName: String
    private let lookup: CollectionLookup
    var sources: [SourcePlan] = []
    /// MATCH terms of the WHERE and how to find full-text indexes (see QueryCompiler+FullText).
    var fullText = FullTextCompilation()
    private var variables: [(name: String, slot: Int)] = []
    private var variableCount = 0
    private var aggregates: [AggregatePlan] = []
    private var parameterNames: Set<String> = []
    /// Each parameter's slot in ``EvaluationContext/parameterValues``, in order of first use.
    private var parameterOrder: [String] = []
    private var resultAliases: [(String, Expression)] = []
    /// Sources referenced while compiling the current expression (for hash-join analysis).
    private var referencedSources: Set<Int> = []
    /// The clause being compiled, which decides whether aggregates may appear in it.
    private var clause = Clause.results
    private var expandingAliases: Set<String> = []
    /// How deep the expression being compiled is nested, and how many expressions were compiled
    /// so far: result aliases are expanded where they are used, so the compiled tree can be
    /// deeper than the parsed one (`SELECT 1 AS a, a + a AS b, b + b AS c, …` even doubles it).
    private var compileDepth = 0
    private var compiledCount = 0
    /// The collation of an enclosing `(…) COLLATE …`: it applies to every string comparison,
    /// LIKE and CONTAINS inside (as in LiteCore), unless an operand names its own.
    private var enclosingCollation: Collation?

    /// The most expressions one query compiles to, counting each use of a result alias afresh.
    static let maximumCompiledExpressions = 100_000

    init(databaseName: String, lookup: @escaping CollectionLookup) {
        self.databaseName = databaseName
        self.lookup = lookup
    }

    /// Compiles `statement` in two steps over one ``QueryPlan``: ``compileStatement(_:)`` builds
    /// every evaluator and reads the main collection by a full scan; ``planMainScan(_:_:)`` then
    /// lets indexes replace that scan where the statement allows. What `explain()` prints is
    /// derived from the finished plan (``QueryPlan/explanationTail(_:)``).
    static func compile(
        _ statement: SelectStatement, databaseName: String, lookup: @escaping CollectionLookup,
        fullTextLookup: FullTextCompilation.Lookup? = nil
    ) throws -> QueryPlan {
        var compiler = QueryCompiler(databaseName: databaseName, lookup: lookup)
        compiler.fullText.lookup = fullTextLookup
        let plan = try compiler.compileStatement(statement)
        return try compiler.planMainScan(statement, plan)
    }

    /// The clauses of a statement, as far as the rule "aggregates only in the result list, HAVING
    /// and ORDER BY" cares.
    enum Clause: Equatable {
        case results, whereClause, groupBy, limitOrOffset, joinCondition, unnest
        /// The argument of an aggregate function (aggregates do not nest).
        case aggregateArgument(String)

        /// Nil where aggregates are allowed, else the clause's name for the error.
        var forbiddingAggregates: String? {
            switch self {
            case .results: nil
            case .whereClause: "WHERE"
            case .groupBy: "GROUP BY"
            case .limitOrOffset: "LIMIT or OFFSET"
            case .joinCondition: "ON"
            case .unnest: "UNNEST"
            case .aggregateArgument(let name): "the argument of \(name)()"
            }
        }
    }

    private func invalid(_ message: String) -> CouchetteError { CouchetteError(.invalidQuery, message) }

    // MARK: - Statement

    /// Step 1: every evaluator of the statement, the main collection read by a full scan.
    private mutating func compileStatement(_ statement: SelectStatement) throws -> QueryPlan {
        let main = try resolve(statement.from)
        sources.append(main.plan)
        var collections: [Int: CollectionSpec] = [0: main.spec]
        for join in statement.joins {
            switch join {
            case .join(_, let source, _):
                let resolved = try resolve(source)
                collections[sources.count] = resolved.spec
                sources.append(resolved.plan)
            case .unnest(let value, let alias):
                let name = alias ?? lastPathComponent(value) ?? "$unnest\(sources.count)"
                sources.append(SourcePlan(kind: .unnest, alias: name, columnName: name, hasExplicitAlias: alias != nil))
            }
        }
        try checkDistinctAliases()
        disambiguateColumnNames()
        for item in statement.results {
            if let alias = item.alias, case .expression(let value) = item.kind { resultAliases.append((alias, value)) }
        }

        // JOIN conditions and UNNEST sources may only see the sources before them (and their own).
        var pendingStages: [(Int, JoinClause)] = []
        for (offset, join) in statement.joins.enumerated() { pendingStages.append((offset + 1, join)) }

        try registerFullTextMatches(statement.whereClause, collection: main.spec, alias: sources[0].alias)
        clause = .whereClause
        var filter: Evaluator?, mainFilter: Evaluator?
        /// The conjuncts of the filter applied right after the main scan (see ``BodyPrecheck/decidesFilter``).
        var scanFilterConjuncts = 0
        if let condition = statement.whereClause {
            if statement.joins.isEmpty {
                filter = try compileExpression(condition)
                scanFilterConjuncts = CompiledIndex.conjuncts(condition).count
            } else {
                // Conjuncts that read only the FROM document run before JOINs and UNNESTs, so
                // rows they reject are never joined (a row passes WHERE iff every conjunct is true).
                var early: [Evaluator] = [], late: [Evaluator] = []
                for conjunct in CompiledIndex.conjuncts(condition) {
                    let (evaluator, used) = try compileTracking(conjunct)
                    if used.isSubset(of: [0]) { early.append(evaluator) } else { late.append(evaluator) }
                }
                mainFilter = Self.conjunction(early)
                filter = Self.conjunction(late)
                scanFilterConjuncts = early.count
            }
        }
        var precheck = try bodyPrecheck(statement.whereClause)
        // Every term reads the FROM document alone, so each is one of those conjuncts.
        if let terms = precheck?.terms.count { precheck?.decidesFilter = terms == scanFilterConjuncts }
        clause = .groupBy
        let groupKeys = try statement.groupBy.map { try compileExpression($0) }
        clause = .results
        let having = try statement.having.map { try compileExpression($0) }

        var columns: [Evaluator] = []
        /// Each column's form read in place (``InPlaceProjection``), nil where it has none.
        var inPlaceColumns: [InPlaceProjection.Column?] = []
        /// The expression of each column that is a plain path (ORDER BY reuses its value).
        var columnPaths: [Expression?] = []
        var names: [(name: String, explicit: Bool)] = []
        for item in statement.results {
            // A result expression may use the other results' aliases, not its own (as in LiteCore).
            if let alias = item.alias { expandingAliases.insert(alias.lowercased()) }
            defer { if let alias = item.alias { expandingAliases.remove(alias.lowercased()) } }
            switch item.kind {
            case .star:
                // `*` is the main source's body; with JOINs or UNNESTs, one column per source.
                for source in (item.alias == nil ? Array(sources.indices) : [0]) {
                    columns.append { context in context.sources[source]?.body }
                    inPlaceColumns.append(source == 0 ? .wholeDocument : nil)
                    columnPaths.append(nil)
                    names.append((item.alias ?? sources[source].columnName, item.alias != nil))
                }
            case .expression(let value):
                if case .allProperties(let base) = value {
                    let source = try sourceIndex(of: base)
                    columns.append { context in context.sources[source]?.body }
                    inPlaceColumns.append(source == 0 ? .wholeDocument : nil)
                    columnPaths.append(nil)
                    names.append((item.alias ?? sources[source].columnName, item.alias != nil))
                } else {
                    inPlaceColumns.append(inPlaceColumn(value))
                    columns.append(try compileExpression(value))
                    columnPaths.append(Self.pathSteps(value) != nil ? value : nil)
                    names.append((item.alias ?? columnName(of: value) ?? "", item.alias != nil))
                }
            }
        }
        let order = try statement.orderBy.map { item -> OrderKey in
            var value = item.expression
            var collation = Collation.binary
            if case .collate(let inner, let explicit) = value {
                value = inner
                collation = explicit
            }
            // ORDER BY a path the results already read (`SELECT birthday … ORDER BY birthday`)
            // takes the column's value instead of reading the document again.
            // Not when the root names a result alias: that name means the alias in some places
            // and the property in others (inside the alias's own expression).
            let steps = Self.pathSteps(value)
            let aliasRoots = Set(resultAliases.map { "i" + $0.0.lowercased() })
            let column =
                steps.map { aliasRoots.contains($0[0].lowercased()) } ?? true
                ? nil : columnPaths.firstIndex { $0.flatMap(Self.pathSteps) == steps }
            return OrderKey(evaluator: try compileExpression(value), descending: item.descending, collation: collation, column: column)
        }
        clause = .limitOrOffset
        let limit = try statement.limit.map { try compileCount($0, "LIMIT") }
        let offset = try statement.offset.map { try compileCount($0, "OFFSET") }

        // The joined sources' scans are made once every expression is compiled: a source's
        // deleted documents become visible when any of them reads META(alias).deleted.
        enum CompiledJoin {
            case join(JoinClause.Kind, source: Int, on: Evaluator?, hash: HashCondition?)
            case unnest(source: Int, Evaluator)
        }
        var compiledJoins: [CompiledJoin] = []
        for (index, join) in pendingStages {
            switch join {
            case .join(let kind, _, let on):
                clause = .joinCondition
                var hash: HashCondition?
                var condition: Evaluator?
                if let on {
                    condition = try compileExpression(on)
                    hash = try hashCondition(on, joined: index)
                }
                compiledJoins.append(.join(kind, source: index, on: condition, hash: hash))
            case .unnest(let value, _):
                clause = .unnest
                compiledJoins.append(.unnest(source: index, try compileExpression(value)))
            }
        }
        let stages = compiledJoins.map { compiled -> Stage in
            switch compiled {
            case .join(let kind, let source, let on, let hash):
                let scan = CollectionScan(collection: collections[source]!, includeDeleted: sources[source].includeDeleted)
                return .join(kind, source: source, scan: scan, on: on, hash: hash)
            case .unnest(let source, let evaluator):
                return .unnest(source: source, evaluator)
            }
        }
        let columnNames = try uniqueColumnNames(names)
        let aggregating = !groupKeys.isEmpty || !aggregates.isEmpty
        if having != nil && !aggregating { throw invalid("HAVING requires GROUP BY or an aggregate function") }

        // Rows of one collection, each projected alone: when every column (and ORDER BY key) is a
        // path of the document or its id, fetched documents can be projected where they lie.
        let projectsInPlace =
            sources.count == 1 && !aggregating && !statement.distinct && order.allSatisfy { $0.column != nil }
            && inPlaceColumns.allSatisfy { $0 != nil }
        return QueryPlan(
            sources: sources, mainScan: CollectionScan(collection: main.spec, includeDeleted: sources[0].includeDeleted),
            stages: stages, mainFilter: mainFilter, filter: filter, precheck: precheck,
            inPlace: projectsInPlace ? InPlaceProjection(columns: inPlaceColumns.compactMap { $0 }) : nil, groupKeys: groupKeys,
            aggregates: aggregates, isAggregating: aggregating, having: having, columns: columns,
            columnNames: columnNames, order: order, distinct: statement.distinct, limit: limit,
            offset: offset, parameterNames: parameterNames, parameterOrder: parameterOrder, variableCount: variableCount)
    }

    /// Step 2: lets indexes find the main collection's documents when the statement allows it (no
    /// deleted documents read); the ranges themselves are chosen at each execution
    /// (``IndexedScan``), when the parameters are known.
    private mutating func planMainScan(_ statement: SelectStatement, _ plan: QueryPlan) throws -> QueryPlan {
        guard !plan.sources[0].includeDeleted, case .collection(let spec) = plan.sources[0].kind else { return plan }
        if let scan = fullTextScan(statement, collection: spec, aggregating: plan.isAggregating) {
            return plan.replacingMainScan(scan)
        }
        let orderUsable = statement.joins.isEmpty && !plan.isAggregating && !statement.distinct && statement.limit != nil
        let analysis = try analyzeIndexUse(statement, orderUsable: orderUsable)
        return analysis.isEmpty ? plan : plan.replacingMainScan(IndexedScan(collection: spec, analysis: analysis))
    }

    /// The sargable parts of WHERE and ORDER BY, with names resolved as ``compilePath`` does.
    private mutating func analyzeIndexUse(_ statement: SelectStatement, orderUsable: Bool) throws -> IndexAnalysis {
        let sources = self.sources
        let resultAliases = Set(self.resultAliases.map { $0.0.lowercased() })
        let mainAlias = sources[0].alias.lowercased()
        let basic: (String) -> ExpressionKey.Root = { name in
            let lowered = name.lowercased()
            if lowered == mainAlias { return .document }
            if sources.contains(where: { $0.alias.lowercased() == lowered }) || resultAliases.contains(lowered) { return .opaque }
            return .property
        }
        var unnested: [String: String] = [:]
        for (offset, join) in statement.joins.enumerated() {
            guard case .unnest(let value, _) = join else { continue }
            if let key = ExpressionKey.make(value, resolve: basic), key.context == .document, !key.text.isEmpty {
                unnested[sources[offset + 1].alias.lowercased()] = key.text
            }
        }
        var compiler = self
        let analyzer = IndexAnalyzer(
            resolveRoot: { name in
                if let path = unnested[name.lowercased()] { return .member(path) }
                return basic(name)
            },
            compileConstant: { expression in
                // Constants read no source or variable; compiling them on a copy changes nothing here.
                try compiler.compileExpression(expression)
            })
        return try analyzer.analyze(statement, orderUsable: orderUsable)
    }

    /// The steps of a plain path (`a.b[0]`, `META(x).id`), root first, as comparable text; nil
    /// for anything else. Two paths with equal steps read the same value of the same row (a root
    /// name resolves the same way wherever it is written in one statement).
    static func pathSteps(_ value: Expression) -> [String]? {
        switch value {
        case .identifier(let name): return ["i" + name]
        case .meta(let alias): return ["m" + (alias ?? "")]
        case .member(let base, let key): return pathSteps(base).map { $0 + ["k" + key] }
        case .subscripted(let base, .literal(.int(let index))): return pathSteps(base).map { $0 + ["n\(index)"] }
        case .subscripted(let base, .literal(.string(let key))): return pathSteps(base).map { $0 + ["k" + key] }
        default: return nil
        }
    }

    /// The conjuncts of `condition` a scan can try on stored bodies in place (``BodyPrecheck``):
    /// LIKE with a constant pattern and comparisons with a literal or a parameter, on fixed paths
    /// of the main document, under binary collation.
    private mutating func bodyPrecheck(_ condition: Expression?) throws -> BodyPrecheck? {
        guard let condition, case .collection = sources[0].kind else { return nil }
        var terms: [BodyPrecheck.Term] = []
        for conjunct in CompiledIndex.conjuncts(condition) {
            switch conjunct {
            case .like(let subject, .literal(.string(let text)), let negated):
                let pattern = LikePattern.Compiled(text, collationOf(subject, .literal(.string(text))))
                guard pattern.matchesPlainBytes, let path = bodyPath(subject) else { continue }
                terms.append(BodyPrecheck.Term(path: path, test: .like(pattern, negated: negated)))
            case .binary(let op, let lhs, let rhs):
                guard collationOf(lhs, rhs).isBinary else { continue }
                // `constant op path` is `path op' constant`, op' the mirrored comparison.
                let mirrored = !Self.isConstant(rhs)
                let (subject, constant) = mirrored ? (rhs, lhs) : (lhs, rhs)
                guard Self.isConstant(constant), let path = bodyPath(subject), let accept = Self.outcomes(op, mirrored: mirrored) else {
                    continue
                }
                terms.append(BodyPrecheck.Term(path: path, test: .compare(try compileExpression(constant), accept)))
            default:
                continue
            }
        }
        return terms.isEmpty ? nil : BodyPrecheck(terms: terms)
    }

    private static func isConstant(_ value: Expression) -> Bool {
        switch value {
        case .literal, .parameter: true
        default: false
        }
    }

    /// Which orders of `path` against the constant make `path op constant` true (`constant op
    /// path` when `mirrored`).
    private static func outcomes(_ op: Expression.BinaryOperator, mirrored: Bool) -> BodyPrecheck.Outcomes? {
        var outcomes = BodyPrecheck.Outcomes()
        switch op {
        case .equal: outcomes.equal = true
        case .less, .lessOrEqual:
            outcomes.equal = op == .lessOrEqual
            if mirrored { outcomes.greater = true } else { outcomes.less = true }
        case .greater, .greaterOrEqual:
            outcomes.equal = op == .greaterOrEqual
            if mirrored { outcomes.less = true } else { outcomes.greater = true }
        default: return nil
        }
        return outcomes
    }

    /// The steps of a fixed path of the main document as ``compilePath(_:)`` resolves it, nil for
    /// anything else: a root that names another source, a result alias, a scope (`scope.collection.path`)
    /// or a variable is not one.
    private func bodyPath(_ value: Expression) -> [BodyPrecheck.Step]? {
        switch value {
        case .identifier(let name):
            let lowered = name.lowercased()
            if lowered == sources[0].alias.lowercased() { return [] }
            if source(named: name) != nil || variables.contains(where: { $0.name == name })
                || resultAliases.contains(where: { $0.0.lowercased() == lowered })
                || sources.contains(where: { source in
                    guard case .collection(let spec) = source.kind else { return false }
                    return spec.scope.lowercased() == lowered
                })
            {
                return nil
            }
            return [.key(Array(name.utf8))]
        case .member(let base, let key):
            return bodyPath(base).map { $0 + [.key(Array(key.utf8))] }
        case .subscripted(let base, .literal(.int(let index))):
            return bodyPath(base).map { $0 + [.index(Int(clamping: index))] }
        case .subscripted(let base, .literal(.string(let key))):
            return bodyPath(base).map { $0 + [.key(Array(key.utf8))] }
        default:
            return nil
        }
    }

    /// The AND of `evaluators`, nil for none.
    private static func conjunction(_ evaluators: [Evaluator]) -> Evaluator? {
        guard var result = evaluators.first else { return nil }
        for next in evaluators.dropFirst() {
            let previous = result
            result = { context in try Operators.and(try previous(context)) { try next(context) } }
        }
        return result
    }

    /// LIMIT and OFFSET: an integer expression; negative values count as 0.
    private mutating func compileCount(_ value: Expression, _ clause: String) throws -> Evaluator {
        if case .literal(let literal) = value {
            guard case .int(let number) = literal else { throw invalid("\(clause) must be an integer, not \(JSON.string(from: literal))") }
            let count = Datum.int(max(0, number))
            return { _ in count }
        }
        return try compileExpression(value)
    }

    // MARK: - Sources

    private func resolve(_ source: DataSource) throws -> (spec: CollectionSpec, plan: SourcePlan) {
        let defaultName = Catalog.defaultName
        var scope = defaultName, name: String, columnName: String
        if source.path.count == 2 {
            scope = source.path[0] == "_" ? defaultName : source.path[0]
            name = source.path[1]
            columnName = name
        } else {
            let only = source.path[0]
            columnName = only
            name = (only == "_" || only == defaultName || only == databaseName) ? defaultName : only
        }
        guard let spec = try lookup(scope, name) else {
            throw invalid(
                "no collection '\(source.path.joined(separator: "."))' in database '\(databaseName)' (FROM/JOIN at offset \(source.offset))"
            )
        }
        let plan = SourcePlan(
            kind: .collection(spec), alias: source.alias ?? columnName,
            columnName: source.alias ?? columnName, hasExplicitAlias: source.alias != nil)
        return (spec, plan)
    }

    private func checkDistinctAliases() throws {
        var seen: Set<String> = []
        for source in sources where !seen.insert(source.alias.lowercased()).inserted {
            throw invalid("duplicate source alias '\(source.alias)': give each JOIN an alias with AS")
        }
    }

    /// Two unaliased collections of the same name in different scopes: columns get `scope.name`.
    private mutating func disambiguateColumnNames() {
        for index in sources.indices where !sources[index].hasExplicitAlias {
            guard case .collection(let spec) = sources[index].kind else { continue }
            let clash = sources.indices.contains { $0 != index && sources[$0].columnName == sources[index].columnName }
            if clash { sources[index].columnName = spec.fullName }
        }
    }

    /// The source that `base` (in `base.*` or `META(base)`) names.
    private func sourceIndex(of base: Expression) throws -> Int {
        if case .identifier(let name) = base, let index = source(named: name) { return index }
        if case .member(.identifier(let scope), let name) = base,
            let index = sources.firstIndex(where: { source in
                guard !source.hasExplicitAlias, case .collection(let spec) = source.kind else { return false }
                return spec.scope.lowercased() == scope.lowercased() && spec.name.lowercased() == name.lowercased()
            })
        {
            return index
        }
        throw invalid("'\(describe(base)).*' does not name a FROM, JOIN or UNNEST alias")
    }

    private func source(named name: String) -> Int? {
        let lowered = name.lowercased()
        return sources.firstIndex { $0.alias.lowercased() == lowered }
    }

    // MARK: - Column names

    /// Couchbase Lite's rule: the last component of a property path, `id` etc. for META().id,
    /// nil (to become `$1`, `$2`, …) for anything else.
    private func columnName(of value: Expression) -> String? {
        switch value {
        case .identifier(let name): return source(named: name) != nil ? sources[source(named: name)!].columnName : name
        case .member(.meta, let field): return field
        // The whole META() is named after its source, as in LiteCore.
        case .meta(let alias): return sources[alias.flatMap(source(named:)) ?? 0].columnName
        case .member(_, let key): return key
        case .subscripted(let base, _): return columnName(of: base)
        case .collate(let inner, _): return columnName(of: inner)
        default: return nil
        }
    }

    private func lastPathComponent(_ value: Expression) -> String? {
        switch value {
        case .identifier(let name): name
        case .member(_, let key): key
        default: nil
        }
    }

    /// LiteCore's naming, column by column in order: a name already taken is an error for an
    /// alias, and gets ` #2`, ` #3`, … otherwise; an unnamed column takes the lowest `$N` not
    /// yet taken (so `SELECT 1, 2 AS \`$1\``… numbers by what came before).
    private func uniqueColumnNames(_ names: [(name: String, explicit: Bool)]) throws -> [String] {
        var used: Set<String> = []
        var result: [String] = []
        for (name, explicit) in names {
            if !name.isEmpty, used.insert(name).inserted {
                result.append(name)
                continue
            }
            guard !explicit else { throw invalid("duplicate column name '\(name)'") }
            var count = 1, candidate: String
            repeat {
                candidate = name.isEmpty ? "$\(count)" : "\(name) #\(count + 1)"
                count += 1
            } while !used.insert(candidate).inserted
            result.append(candidate)
        }
        return result
    }

    // MARK: - Joins

    /// Finds `outer = inner` among the top-level ANDs of ON, where `inner` reads only the joined
    /// source and `outer` only earlier ones.
    private mutating func hashCondition(_ on: Expression, joined: Int) throws -> HashCondition? {
        var conjuncts: [Expression] = []
        func split(_ value: Expression) {
            if case .binary(.and, let a, let b) = value { split(a); split(b) } else { conjuncts.append(value) }
        }
        split(on)
        for conjunct in conjuncts {
            guard case .binary(.equal, let a, let b) = conjunct else { continue }
            if case .collate = a { continue }
            if case .collate = b { continue }
            let (left, leftSources) = try compileTracking(a)
            let (right, rightSources) = try compileTracking(b)
            if leftSources == [joined], !rightSources.isEmpty, rightSources.allSatisfy({ $0 < joined }) {
                let byID = isDocumentID(a, of: joined)
                return HashCondition(
                    outer: right, inner: left, innerIsDocumentID: byID, lookupDecidesOn: byID && conjuncts.count == 1,
                    innerKey: indexKey(a, of: joined))
            }
            if rightSources == [joined], !leftSources.isEmpty, leftSources.allSatisfy({ $0 < joined }) {
                let byID = isDocumentID(b, of: joined)
                return HashCondition(
                    outer: left, inner: right, innerIsDocumentID: byID, lookupDecidesOn: byID && conjuncts.count == 1,
                    innerKey: indexKey(b, of: joined))
            }
        }
        return nil
    }

    /// The canonical key of an expression over the joined source `index` alone, as an index on
    /// that collection would name it (``CompiledIndex/columnKeys``); nil when no index can hold it.
    private func indexKey(_ value: Expression, of index: Int) -> String? {
        let alias = sources[index].alias.lowercased()
        guard let key = ExpressionKey.make(value, resolve: { $0.lowercased() == alias ? .document : .opaque }),
            key.context == .document, !key.text.isEmpty
        else { return nil }
        return key.text
    }

    /// True for `META(alias).id` of the source `index`: the join can look documents up by key.
    private func isDocumentID(_ value: Expression, of index: Int) -> Bool {
        guard case .member(.meta(let alias?), let field) = value, field.lowercased() == "id" else { return false }
        return source(named: alias) == index
    }

    private mutating func compileTracking(_ value: Expression) throws -> (Evaluator, Set<Int>) {
        let saved = referencedSources
        referencedSources = []
        defer { referencedSources = saved }
        let evaluator = try compileExpression(value)
        return (evaluator, referencedSources)
    }

    // MARK: - Expressions

    enum PathStep {
        case key(String)
        case index(Expression)
    }

    /// Splits `a.b[0].c` into its root and steps.
    private func path(_ value: Expression) -> (root: Expression, steps: [PathStep]) {
        switch value {
        case .member(let base, let key):
            let (root, steps) = path(base)
            return (root, steps + [.key(key)])
        case .subscripted(let base, let index):
            let (root, steps) = path(base)
            return (root, steps + [.index(index)])
        default:
            return (value, [])
        }
    }

    /// Compiles one expression, within ``Parser/maximumDepth`` levels and
    /// ``maximumCompiledExpressions`` expressions: evaluators recurse once per level, at run time
    /// on whatever thread executes the query.
    mutating func compileExpression(_ value: Expression) throws -> Evaluator {
        compileDepth += 1
        compiledCount += 1
        defer { compileDepth -= 1 }
        guard compileDepth <= Parser.maximumDepth else {
            throw invalid("expression nested deeper than \(Parser.maximumDepth) levels (counting the result aliases it uses)")
        }
        guard compiledCount <= Self.maximumCompiledExpressions else {
            throw invalid("query too large: more than \(Self.maximumCompiledExpressions) expressions (counting each use of a result alias)")
        }
        return try compileNode(value)
    }

    private mutating func compileNode(_ value: Expression) throws -> Evaluator {
        switch value {
        case .literal(let literal):
            let datum = Datum(literal)
            return { _ in datum }
        case .missing:
            return { _ in nil }
        case .parameter(let name):
            parameterNames.insert(name)
            let slot = parameterOrder.firstIndex(of: name) ?? parameterOrder.count
            if slot == parameterOrder.count { parameterOrder.append(name) }
            return { context in context.parameter(slot, name) }
        case .identifier, .member, .subscripted, .meta:
            return try compilePath(value)
        case .allProperties(let base):
            throw invalid("'\(describe(base)).*' is only allowed in the result list")
        case .array(let elements):
            let evaluators = try elements.map { try compileExpression($0) }
            // A MISSING element is left out, as LiteCore's array_of() does: `[1, nope]` is `[1]`.
            return { context in .array(try evaluators.compactMap { try $0(context) }) }
        case .object(let entries):
            let evaluators = try entries.map { ($0.0, try compileExpression($0.1)) }
            return { context in
                var result: [String: Datum] = [:]
                for (key, evaluator) in evaluators { result[key] = try evaluator(context) }
                return .object(result)
            }
        case .unary(.negate, .literal(.largeInteger(let number))):
            let negated = Datum(number.negated)  // exact: `-9223372036854775808` is Int64.min
            return { _ in negated }
        case .unary(.negate, let operand):
            let evaluator = try compileExpression(operand)
            return { context in Operators.arithmetic(.subtract, .int(0), try evaluator(context)) }
        case .unary(.not, let operand):
            let evaluator = try compileExpression(operand)
            return { context in Operators.not(try evaluator(context)) }
        case .binary(let op, let lhs, let rhs):
            return try compileBinary(op, lhs, rhs)
        case .isTest(let operand, let test, let negated):
            let evaluator = try compileExpression(operand)
            return { context in
                let value = try evaluator(context)
                let result: Bool?
                switch test {
                case .null: result = value.map { $0.isNull }
                case .missing: result = value == nil
                case .valued: result = value.map { !$0.isNull } ?? false
                }
                guard let result else { return nil }
                return .bool(negated ? !result : result)
            }
        case .identical(let lhs, .literal(.null), let negated):
            // `IS NULL` written as `IS null`: the same as the IS NULL test.
            return try compileNode(.isTest(lhs, .null, negated: negated))
        case .identical(let lhs, .missing, let negated):
            return try compileNode(.isTest(lhs, .missing, negated: negated))
        case .identical(let lhs, let rhs, let negated):
            let collation = collationOf(lhs, rhs)
            let left = try compileExpression(lhs), right = try compileExpression(rhs)
            return { context in
                let a = try left(context), b = try right(context)
                let same: Bool
                switch (a, b) {
                case (nil, nil): same = true
                case (nil, _), (_, nil): same = false
                default: if case .bool(true)? = Operators.equal(a, b, collation) { same = true } else { same = false }
                }
                return .bool(same != negated)
            }
        case .like(let subject, let pattern, let negated):
            let collation = collationOf(subject, pattern)
            let left = try compileExpression(subject), right = try compileExpression(pattern)
            if case .literal(.string(let text)) = pattern {  // the usual case: taken apart once
                let compiled = LikePattern.Compiled(text, collation)
                return { context in
                    guard let value = try left(context) else { return nil }
                    guard case .string(let a) = value else { return .null }
                    return .bool(compiled.matches(a) != negated)
                }
            }
            return { context in
                guard let text = try left(context), let pattern = try right(context) else { return nil }
                guard case .string(let a) = text, case .string(let b) = pattern else { return .null }
                return .bool(LikePattern.matches(a, b, collation) != negated)
            }
        case .inArray(let needle, let haystack, let negated):
            let collation = collationOf(needle, haystack)
            let left = try compileExpression(needle), right = try compileExpression(haystack)
            return { context in
                guard let value = try left(context), let list = try right(context) else { return nil }
                guard let elements = list.elements else { return .null }
                if value.isNull { return .null }
                let found = elements.contains { element in
                    if case .bool(true)? = Operators.equal(value, element, collation) { return true }
                    return false
                }
                return .bool(found != negated)
            }
        case .between(let subject, let low, let high, let negated):
            let collation = collationOf(subject, low, high)
            let value = try compileExpression(subject), lower = try compileExpression(low), upper = try compileExpression(high)
            return { context in
                let x = try value(context)
                let result = try Operators.and(Operators.compare(x, try lower(context), collation) { $0 >= 0 }) {
                    Operators.compare(x, try upper(context), collation) { $0 <= 0 }
                }
                return negated ? Operators.not(result) : result
            }
        case .caseWhen(let subject, let whens, let otherwise):
            let subjectEvaluator = try subject.map { try compileExpression($0) }
            let branches = try whens.map { (try compileExpression($0.0), try compileExpression($0.1)) }
            let fallback = try otherwise.map { try compileExpression($0) }
            return { context in
                let subjectValue = try subjectEvaluator?(context)
                for (condition, result) in branches {
                    let test = try condition(context)
                    let matched: Bool
                    if subjectEvaluator != nil {
                        if case .bool(true)? = Operators.equal(subjectValue, test) { matched = true } else { matched = false }
                    } else {
                        matched = test.map { !$0.isNull && $0.isTruthy } ?? false
                    }
                    if matched { return try result(context) }
                }
                return try fallback?(context) ?? (fallback == nil ? .null : nil)
            }
        case .quantified(let quantifier, let variable, let source, let condition):
            let collection = try compileExpression(source)
            let slot = variableCount
            variableCount += 1
            variables.append((variable, slot))
            defer { variables.removeLast() }
            let test = try compileExpression(condition)
            return { context in
                let members = Operators.members(try collection(context))
                let saved = context.variables[slot]
                defer { context.variables[slot] = saved }
                switch quantifier {
                case .any:
                    for member in members {
                        context.variables[slot] = member
                        if let result = try test(context), !result.isNull, result.isTruthy { return .bool(true) }
                    }
                    return .bool(false)
                case .every, .anyAndEvery:
                    if quantifier == .anyAndEvery && members.isEmpty { return .bool(false) }
                    for member in members {
                        context.variables[slot] = member
                        if let result = try test(context), !result.isNull, !result.isTruthy { return .bool(false) }
                    }
                    return .bool(true)
                }
            }
        case .exists(let operand):
            let evaluator = try compileExpression(operand)
            return { context in
                guard let value = try evaluator(context) else { return .bool(false) }
                return .bool((value.containerCount ?? 0) > 0 && value.kind == .array)
            }
        case .function(let name, let arguments, let distinct, let star, let offset):
            return try compileFunction(name, arguments, distinct: distinct, star: star, offset: offset)
        case .collate(let inner, let collation):
            let saved = enclosingCollation
            enclosingCollation = collation
            defer { enclosingCollation = saved }
            return try compileExpression(inner)
        }
    }

    /// The collation an operation uses: one an operand names, else the enclosing COLLATE's.
    private func collationOf(_ operands: Expression...) -> Collation {
        for operand in operands { if case .collate(_, let collation) = operand { return collation } }
        return enclosingCollation ?? .binary
    }

    private mutating func compileBinary(_ op: Expression.BinaryOperator, _ lhs: Expression, _ rhs: Expression) throws -> Evaluator {
        let collation = collationOf(lhs, rhs)
        let left = try compileExpression(lhs), right = try compileExpression(rhs)
        switch op {
        case .and: return { context in try Operators.and(try left(context)) { try right(context) } }
        case .or: return { context in try Operators.or(try left(context)) { try right(context) } }
        case .equal: return { context in Operators.equal(try left(context), try right(context), collation) }
        case .notEqual: return { context in Operators.not(Operators.equal(try left(context), try right(context), collation)) }
        case .less: return { context in Operators.compare(try left(context), try right(context), collation) { $0 < 0 } }
        case .lessOrEqual: return { context in Operators.compare(try left(context), try right(context), collation) { $0 <= 0 } }
        case .greater: return { context in Operators.compare(try left(context), try right(context), collation) { $0 > 0 } }
        case .greaterOrEqual: return { context in Operators.compare(try left(context), try right(context), collation) { $0 >= 0 } }
        case .concat: return { context in Operators.concat(try left(context), try right(context)) }
        case .add, .subtract, .multiply, .divide, .modulo:
            return { context in Operators.arithmetic(op, try left(context), try right(context)) }
        }
    }

    // MARK: - Paths

    /// The form of result column `value` that ``InPlaceProjection`` reads from a fetched document
    /// where it lies: `META().id`, or a path with static steps from the main document, resolved as
    /// ``compilePath(_:)`` resolves it. Nil for anything else (a result alias, a variable, another
    /// source, a computed value): those columns are evaluated on owned documents.
    private func inPlaceColumn(_ value: Expression) -> InPlaceProjection.Column? {
        var (root, steps) = path(value)
        switch root {
        case .meta(let alias):
            guard alias.map({ source(named: $0) == 0 }) ?? true, steps.count == 1, case .key(let field) = steps[0],
                field.lowercased() == "id"
            else { return nil }
            return .id
        case .identifier(let name):
            guard !variables.contains(where: { $0.name == name }) else { return nil }
            if let index = source(named: name) {
                guard index == 0 else { return nil }
            } else if let index = scopedSource(name, steps) {
                guard index == 0 else { return nil }
                steps.removeFirst()
            } else if resultAliases.contains(where: { $0.0.lowercased() == name.lowercased() }) {
                return nil
            } else {
                steps.insert(.key(name), at: 0)
            }
        default:
            return nil
        }
        guard !steps.isEmpty else { return nil }  // the whole document: read from the owned copy
        var compiled: [CompiledStep] = []
        for step in steps {
            switch step {
            case .key(let key): compiled.append(.key(key))
            case .index(.literal(.int(let number))): compiled.append(.index(Int(clamping: number)))
            case .index(.literal(.string(let key))): compiled.append(.key(key))
            case .index: return nil
            }
        }
        return .path(compiled)
    }

    private mutating func compilePath(_ value: Expression) throws -> Evaluator {
        var (root, steps) = path(value)
        let base: Evaluator
        switch root {
        case .identifier(let name):
            if let variable = variables.last(where: { $0.name == name }) {
                let slot = variable.slot
                base = { context in context.variables[slot] }
            } else if let index = source(named: name) {
                referencedSources.insert(index)
                base = { context in context.sources[index]?.body }
            } else if let index = scopedSource(name, steps) {
                referencedSources.insert(index)
                steps.removeFirst()
                base = { context in context.sources[index]?.body }
            } else if let aliased = resultAliases.first(where: { $0.0.lowercased() == name.lowercased() }),
                !expandingAliases.contains(name.lowercased())
            {
                expandingAliases.insert(name.lowercased())
                defer { expandingAliases.remove(name.lowercased()) }
                base = try compileExpression(aliased.1)
            } else {
                referencedSources.insert(0)
                steps.insert(.key(name), at: 0)
                base = { context in context.sources[0]?.body }
            }
        case .meta(let alias):
            let index =
                try alias.map { name -> Int in
                    guard let index = source(named: name) else { throw invalid("META(\(name)): '\(name)' is not a FROM or JOIN alias") }
                    return index
                } ?? 0
            guard case .collection = sources[index].kind else { throw invalid("META(\(alias ?? "")): an UNNEST alias has no metadata") }
            referencedSources.insert(index)
            if case .key(let field)? = steps.first {
                steps.removeFirst()
                base = try metaField(field, source: index)
            } else {
                // Couchbase Lite's shape: id, sequence, deleted (as 0 or 1: LiteCore builds the
                // dictionary from SQL values), revisionID, and expiration when there is one. Like
                // META().deleted, it makes the source's deleted documents visible.
                sources[index].includeDeleted = true
                let fields = ["id", "sequence", "expiration", "revisionID"]
                let evaluators = try fields.map { ($0, try metaField($0, source: index)) }
                base = { context in
                    guard let binding = context.sources[index] else { return nil }
                    var result: [String: Datum] = ["deleted": .int(binding.isDeleted ? 1 : 0)]
                    for (name, evaluator) in evaluators { result[name] = try evaluator(context) }
                    return .object(result)
                }
            }
        default:
            base = try compileExpression(root)
        }
        if steps.isEmpty { return base }
        let compiledSteps: [CompiledStep] = try steps.map { step in
            switch step {
            case .key(let key): return .key(key)
            case .index(.literal(.int(let number))): return .index(Int(clamping: number))
            case .index(.literal(.string(let key))): return .key(key)
            case .index(let expression): return .dynamic(try compileExpression(expression))
            }
        }
        if compiledSteps.allSatisfy({ if case .dynamic = $0 { false } else { true } }) {
            // Static steps walk a stored document where it lies, keys compared as UTF-8 made once
            // here: no value is made per level, and a scalar at the end is read from the bytes.
            let keys = compiledSteps.map { step -> [UInt8] in if case .key(let key) = step { Array(key.utf8) } else { [] } }
            return { context in
                guard let start = try base(context) else { return nil }
                guard case .stored(let encoded) = start else { return try Self.follow(start, compiledSteps, context) }
                return Self.walk(encoded, compiledSteps, keys)
            }
        }
        return { context in
            guard let start = try base(context) else { return nil }
            return try Self.follow(start, compiledSteps, context)
        }
    }

    /// Follows static `steps` (`keys[i]`: step i's key as UTF-8) through a stored value; MISSING as
    /// soon as one finds nothing. A container at the end stays in its owned encoding.
    private static func walk(_ encoded: EncodedValue, _ steps: [CompiledStep], _ keys: [[UInt8]]) -> Datum? {
        encoded.bytes.withUnsafeBytes { buffer in
            walk(BorrowedValue(buffer: buffer, offset: encoded.offset, depth: encoded.depth), steps, keys) { encoded }
        }
    }

    /// ``walk(_:_:_:)`` from `start`, read where it lies (a fetched document's bytes in the map,
    /// ``InPlaceProjection``): a scalar at the end is read from the bytes, and only a container
    /// there is made owned, walked again from `owned()`, the same value as an owned encoding.
    static func walk(_ start: BorrowedValue, _ steps: [CompiledStep], _ keys: [[UInt8]], owned: () -> EncodedValue) -> Datum? {
        var value = start
        for (index, step) in steps.enumerated() {
            let next: BorrowedValue?
            switch step {
            case .key: next = keys[index].withUnsafeBufferPointer { value.value(forKey: $0) }
            case .index(let position): next = value.element(at: position < 0 ? value.count + position : position)
            case .dynamic: next = nil
            }
            guard let next else { return nil }
            value = next
        }
        if let scalar = Datum(scalar: value) { return scalar }
        // Walked again to own it (rare in a WHERE: paths mostly end at scalars).
        var container = owned()
        for step in steps {
            let next: EncodedValue?
            switch step {
            case .key(let key): next = container.value(forKey: key)
            case .index(let position): next = container.element(at: position < 0 ? container.count + position : position)
            case .dynamic: next = nil
            }
            guard let next else { return nil }
            container = next
        }
        return Datum(container)
    }

    /// Follows `steps` from `start`; MISSING as soon as one finds nothing.
    private static func follow(_ start: Datum, _ steps: [CompiledStep], _ context: EvaluationContext) throws -> Datum? {
        var current = start
        for step in steps {
            let next: Datum?
            switch step {
            case .key(let key): next = current.member(key)
            case .index(let position): next = current.element(position)
            case .dynamic(let evaluator):
                switch try evaluator(context) {
                case .int(let position)?: next = current.element(Int(clamping: position))
                // A whole double beyond Int (a[1e300]) is out of range like any other: MISSING.
                case .double(let position)? where position == position.rounded():
                    next = Int(exactly: position).flatMap { current.element($0) }
                case .string(let key)?: next = current.member(key)
                default: next = nil
                }
            }
            guard let next else { return nil }
            current = next
        }
        return current
    }

    enum CompiledStep: Sendable {
        case key(String)
        case index(Int)
        case dynamic(Evaluator)
    }

    /// `scope.collection.path` for an unaliased source.
    private func scopedSource(_ name: String, _ steps: [PathStep]) -> Int? {
        guard case .key(let second)? = steps.first else { return nil }
        return sources.firstIndex { source in
            guard !source.hasExplicitAlias, case .collection(let spec) = source.kind else { return false }
            return spec.scope.lowercased() == name.lowercased() && spec.name.lowercased() == second.lowercased()
        }
    }

    private mutating func metaField(_ field: String, source index: Int) throws -> Evaluator {
        switch field.lowercased() {
        case "id": return { context in context.sources[index].map { .string($0.id) } }
        case "sequence": return { context in context.sources[index].map { .int(Int64(clamping: $0.sequence)) } }
        case "revisionid": return { context in context.sources[index].map { .string($0.revisionID) } }
        case "deleted":
            sources[index].includeDeleted = true
            return { context in context.sources[index].map { .bool($0.isDeleted) } }
        case "expiration":
            return { context in
                guard let binding = context.sources[index], binding.expiration != 0 else { return nil }
                return .int(Int64(clamping: binding.expiration))
            }
        default:
            throw invalid("META() has no property '\(field)' (use id, sequence, revisionID, deleted or expiration)")
        }
    }

    // MARK: - Functions

    private mutating func compileFunction(_ name: String, _ arguments: [Expression], distinct: Bool, star: Bool, offset: Int) throws
        -> Evaluator
    {
        if let kind = AggregateKind(rawValue: name) {
            if let forbidding = clause.forbiddingAggregates {
                throw invalid("aggregate \(name)() is not allowed in \(forbidding) (offset \(offset))")
            }
            if star && kind != .count { throw invalid("\(name)(*) is not allowed; only COUNT(*) (offset \(offset))") }
            guard star || arguments.count == 1 else {
                throw invalid("\(name)() takes one argument, got \(arguments.count) (offset \(offset))")
            }
            let outer = clause
            clause = .aggregateArgument(name)
            defer { clause = outer }
            let argument = star ? nil : try compileExpression(arguments[0])
            let slot = aggregates.count
            aggregates.append(AggregatePlan(kind: kind, argument: argument, distinct: distinct))
            return { context in context.aggregates[slot] }
        }
        guard !star, !distinct else {
            throw invalid("\(name)(\(star ? "*" : "DISTINCT …")) is only allowed for aggregates (offset \(offset))")
        }
        if let fullText = try compileFullTextFunction(name, arguments, offset: offset) { return fullText }
        if name == "CONTAINS", arguments.count == 2, case let collation = collationOf(arguments[0], arguments[1]), !collation.isBinary {
            return try compileContains(arguments[0], arguments[1], collation)
        }
        guard let function = FunctionLibrary.functions[name] else {
            throw invalid("unknown function \(name)() at offset \(offset)")
        }
        guard function.arity.contains(arguments.count) else {
            let expected =
                function.arity.lowerBound == function.arity.upperBound
                ? "\(function.arity.lowerBound)"
                : function.arity.upperBound == Int.max
                    ? "at least \(function.arity.lowerBound)"
                    : "\(function.arity.lowerBound) to \(function.arity.upperBound)"
            throw invalid("\(name)() takes \(expected) arguments, got \(arguments.count) (offset \(offset))")
        }
        let evaluators = try arguments.map { try compileExpression($0) }
        let body = function.body
        if function.propagatesMissingAndNull {
            return { context in
                var values: [Datum?] = []
                values.reserveCapacity(evaluators.count)
                var sawNull = false
                for evaluator in evaluators {
                    guard let value = try evaluator(context) else { return nil }
                    if value.isNull { sawNull = true }
                    values.append(value)
                }
                return sawNull ? .null : try body(values)
            }
        }
        return { context in try body(try evaluators.map { try $0(context) }) }
    }

    /// CONTAINS under a collation (its own COLLATE or an enclosing one), as LiteCore's
    /// contains() takes one: `CONTAINS(name, 'jén') COLLATE (UNICODE NOCASE NODIAC)` finds "Jennifer".
    private mutating func compileContains(_ subject: Expression, _ part: Expression, _ collation: Collation) throws -> Evaluator {
        let text = try compileExpression(subject), piece = try compileExpression(part)
        return { context in
            guard let a = try text(context), let b = try piece(context) else { return nil }
            guard case .string(let haystack) = a, case .string(let needle) = b else { return .null }
            return .bool(needle.isEmpty || collation.fold(haystack).contains(collation.fold(needle)))
        }
    }

    private func describe(_ value: Expression) -> String {
        switch value {
        case .identifier(let name): name
        case .member(let base, let key): describe(base) + "." + key
        default: "expression"
        }
    }
}
