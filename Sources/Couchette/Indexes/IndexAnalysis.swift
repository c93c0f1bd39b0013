/// What the planner may use an index for, found once when a query is compiled: the sargable
/// conditions of its WHERE (as a tree of AND/OR) and the ORDER BY keys. Which index (if any)
/// serves them is decided at each execution (``IndexPlanner``), since indexes come and go.
struct IndexAnalysis: Sendable {
    var condition: AccessCondition?
    /// Keys of the WHERE's top-level AND terms: a partial index is usable when its condition's
    /// terms are all among them.
    var conjunctKeys: Set<String> = []
    /// ORDER BY keys (document expressions) when the query may read rows in index order and stop
    /// early: a LIMIT, no JOIN/UNNEST, grouping or DISTINCT, binary collation, one direction.
    var order: OrderRequest?
    /// The whole WHERE is one comparison `path = c`, `path <= c` or `path >= c` (binary
    /// collation): a range built from a string `c` holds exactly the documents it accepts
    /// (see ``IndexPlanner/Range/decidesWhere``).
    var whereIsOneComparison = false

    struct OrderRequest: Sendable {
        var keys: [String]
        var descending: Bool
    }

    var isEmpty: Bool { condition == nil && order == nil }
}

/// Conditions that a document must meet for the WHERE to be true: a superset description, so
/// a term that cannot be used is simply left out of an AND (but spoils an OR).
indirect enum AccessCondition: Sendable {
    case term(IndexTerm)
    case all([AccessCondition])
    case any([AccessCondition])
}

/// One comparison of an indexable expression with a value fixed for the execution.
struct IndexTerm: Sendable {
    enum Predicate: Sendable {
        case equal(Evaluator)
        /// `IN`: the evaluator gives the array of values.
        case among(Evaluator)
        /// Inclusive bounds (exclusive ones are widened: the WHERE is re-applied anyway).
        case range(lower: Evaluator?, upper: Evaluator?)
        /// `LIKE 'prefix%'`: strings starting with the prefix.
        case prefix(String)
        case isNull
        /// Neither MISSING nor null.
        case valued
        case notMissing
    }

    var context: ExpressionKey.Context
    var key: String
    var predicate: Predicate
    /// How explain() shows it, e.g. `name = "Ann"`.
    var text: String
    /// The parameter that is the whole constant of an `=`, `<=` or `>=` (`email = $email`), when
    /// it is one: a prepared lookup reads its value straight from the execution's slots
    /// (``DirectIndexLookup``) instead of making an evaluation context to run the evaluator.
    var parameter: String? = nil
}

/// Finds the sargable parts of a statement (see ``IndexAnalysis``).
struct IndexAnalyzer {
    /// What a root identifier of the WHERE refers to (the compiler's name resolution).
    let resolveRoot: (String) -> ExpressionKey.Root
    /// Compiles a constant expression (literals and parameters only).
    let compileConstant: (Expression) throws -> Evaluator

    func analyze(_ statement: SelectStatement, orderUsable: Bool) throws -> IndexAnalysis {
        var analysis = IndexAnalysis()
        if let condition = statement.whereClause {
            analysis.condition = try extract(condition, member: nil)
            if case .term(let term)? = analysis.condition, term.context == .document,
                case .binary(let op, let lhs, let rhs) = condition, [.equal, .lessOrEqual, .greaterOrEqual].contains(op)
            {
                var collated = false
                for side in [lhs, rhs] { if case .collate = side { collated = true } }
                analysis.whereIsOneComparison = !collated
            }
            for conjunct in CompiledIndex.conjuncts(condition) {
                if let key = ExpressionKey.make(conjunct, resolve: resolveRoot), key.context == .document {
                    analysis.conjunctKeys.insert(key.text)
                }
            }
        }
        if orderUsable, let first = statement.orderBy.first {
            var keys: [String] = []
            for item in statement.orderBy {
                guard item.descending == first.descending, let key = documentKey(item.expression) else { keys = []; break }
                keys.append(key)
            }
            if !keys.isEmpty { analysis.order = .init(keys: keys, descending: first.descending) }
        }
        return analysis
    }

    private func documentKey(_ expression: Expression) -> String? {
        guard let key = subjectKey(expression, member: nil), key.context == .document else { return nil }
        return key.text
    }

    /// The key of a compared expression; nil under a non-binary collation.
    private func subjectKey(_ expression: Expression, member: (variable: String, path: String)?) -> ExpressionKey? {
        var subject = expression
        if case .collate(let inner, let collation) = subject {
            guard collation.isBinary else { return nil }
            subject = inner
        }
        let key = ExpressionKey.make(subject) { name in
            if let member, member.variable == name { return .member(member.path) }
            return resolveRoot(name)
        }
        guard let key else { return nil }
        if key.context == .document && key.text.isEmpty { return nil }
        return key
    }

    private static func isConstant(_ expression: Expression) -> Bool {
        switch expression {
        case .literal, .parameter, .missing: true
        case .array(let elements): elements.allSatisfy(isConstant)
        case .unary(.negate, let operand): isConstant(operand)
        case .collate(let inner, let collation): collation.isBinary && isConstant(inner)
        default: false
        }
    }

    private static func describe(_ expression: Expression) -> String {
        switch expression {
        case .literal(let value): JSON.string(from: value)
        case .parameter(let name): "$" + name
        case .missing: "MISSING"
        case .array(let elements): "[" + elements.map(describe).joined(separator: ", ") + "]"
        case .unary(.negate, let operand): "-" + describe(operand)
        case .collate(let inner, _): describe(inner)
        default: "…"
        }
    }

    private static func shown(_ key: ExpressionKey) -> String {
        key.text.isEmpty ? "member" : key.text
    }

    private func extract(_ expression: Expression, member: (variable: String, path: String)?) throws -> AccessCondition? {
        func term(
            _ subject: Expression, _ predicate: IndexTerm.Predicate, parameter: String? = nil, _ text: (String) -> String
        ) -> AccessCondition? {
            guard let key = subjectKey(subject, member: member) else { return nil }
            return .term(
                IndexTerm(context: key.context, key: key.text, predicate: predicate, text: text(Self.shown(key)), parameter: parameter))
        }
        switch expression {
        case .binary(.and, let a, let b):
            let parts = try [extract(a, member: member), extract(b, member: member)].compactMap { $0 }
            if parts.isEmpty { return nil }
            return parts.count == 1 ? parts[0] : .all(parts)
        case .binary(.or, let a, let b):
            guard let left = try extract(a, member: member), let right = try extract(b, member: member) else { return nil }
            return .any([left, right])
        case .identical(let lhs, let rhs, negated: false):
            // `x IS c` selects what `x = c` selects unless c is null or MISSING (IS NULL and
            // IS MISSING are their own tests).
            for side in [lhs, rhs] {
                if case .literal(.null) = side { return nil }
                if case .missing = side { return nil }
            }
            return try extract(.binary(.equal, lhs, rhs), member: member)
        case .binary(let op, let lhs, let rhs):
            var subject = lhs, constant = rhs, operation = op
            if Self.isConstant(lhs) && !Self.isConstant(rhs) {
                subject = rhs
                constant = lhs
                switch op {
                case .less: operation = .greater
                case .lessOrEqual: operation = .greaterOrEqual
                case .greater: operation = .less
                case .greaterOrEqual: operation = .lessOrEqual
                default: break
                }
            }
            guard Self.isConstant(constant), !Self.isConstant(subject) else { return nil }
            if case .collate(_, let collation) = constant, !collation.isBinary { return nil }
            let value = try compileConstant(constant)
            let shown = Self.describe(constant)
            var parameter: String?
            if case .parameter(let name) = constant { parameter = name }
            switch operation {
            case .equal: return term(subject, .equal(value), parameter: parameter) { "\($0) = \(shown)" }
            case .less, .lessOrEqual:
                return term(subject, .range(lower: nil, upper: value), parameter: parameter) { "\($0) \(operation.rawValue) \(shown)" }
            case .greater, .greaterOrEqual:
                return term(subject, .range(lower: value, upper: nil), parameter: parameter) { "\($0) \(operation.rawValue) \(shown)" }
            default: return nil
            }
        case .between(let subject, let low, let high, negated: false):
            guard Self.isConstant(low), Self.isConstant(high) else { return nil }
            let lower = try compileConstant(low), upper = try compileConstant(high)
            return term(subject, .range(lower: lower, upper: upper)) {
                "\($0) BETWEEN \(Self.describe(low)) AND \(Self.describe(high))"
            }
        case .inArray(let needle, let haystack, negated: false):
            guard Self.isConstant(haystack) else { return nil }
            if case .collate(_, let collation) = haystack, !collation.isBinary { return nil }
            let values = try compileConstant(haystack)
            return term(needle, .among(values)) { "\($0) IN \(Self.describe(haystack))" }
        case .like(let subject, let pattern, negated: false):
            guard case .literal(.string(let text)) = pattern, let prefix = Self.likePrefix(text) else { return nil }
            return term(subject, .prefix(prefix)) { "\($0) LIKE \(JSON.string(from: .string(text)))" }
        case .isTest(let subject, let test, let negated):
            switch (test, negated) {
            case (.null, false): return term(subject, .isNull) { "\($0) IS NULL" }
            case (.null, true), (.valued, false): return term(subject, .valued) { "\($0) IS VALUED" }
            case (.missing, true): return term(subject, .notMissing) { "\($0) IS NOT MISSING" }
            default: return nil
            }
        case .quantified(let quantifier, let variable, let source, let condition) where quantifier != .every && member == nil:
            guard let path = subjectKey(source, member: nil), path.context == .document else { return nil }
            return try extract(condition, member: (variable, path.text))
        default:
            return nil
        }
    }

    /// The literal start of a LIKE pattern, when every string it matches starts with those
    /// bytes. LIKE compares Characters (canonical equivalence), so only ASCII that no other
    /// character is canonically equivalent to is safe ('K' has the Kelvin sign, ';' the Greek
    /// question mark, '`' the Greek varia).
    static func likePrefix(_ pattern: String) -> String? {
        var prefix = ""
        for scalar in pattern.unicodeScalars {
            if scalar == "%" || scalar == "_" || scalar == "\\" { break }
            guard scalar.isASCII, scalar.value >= 0x20, scalar != "K", scalar != ";", scalar != "`" else { return nil }
            prefix.unicodeScalars.append(scalar)
        }
        return prefix.isEmpty ? nil : prefix
    }
}
