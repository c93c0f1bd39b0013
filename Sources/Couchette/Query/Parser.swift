/// Parses SQL++ text into a ``SelectStatement`` by recursive descent.
///
/// Precedence, loosest first: `OR`; `AND`; `NOT`; comparisons, `IS`, `LIKE`, `IN`, `BETWEEN`;
/// `||`; `+ -`; `* / %`; unary minus; `.name`, `[index]`, `COLLATE`. Keywords and function names
/// are case-insensitive; identifiers keep their case. Every error is `.invalidQuery` with the
/// character offset and what was expected there.
struct Parser {
    private let tokens: [Token]
    private var index = 0

    static let reserved: Set<String> = [
        "ALL", "AND", "ANY", "AS", "ASC", "BETWEEN", "BY", "CASE", "COLLATE", "CROSS", "DESC", "DISTINCT",
        "ELSE", "END", "EVERY", "EXISTS", "FALSE", "FROM", "GROUP", "HAVING", "IN", "INNER", "IS", "JOIN",
        "LEFT", "LIKE", "LIMIT", "MISSING", "NOT", "NULL", "OFFSET", "ON", "OR", "ORDER", "OUTER",
        "SATISFIES", "SELECT", "SOME", "THEN", "TRUE", "UNNEST", "VALUED", "WHEN", "WHERE",
    ]

    init(_ text: String) throws { tokens = try Lexer.tokenize(text) }

    static func parse(_ text: String) throws -> SelectStatement {
        var parser = try Parser(text)
        return try parser.statement()
    }

    /// Parses one expression that must make up the whole text (index expressions and conditions).
    static func parseExpression(_ text: String) throws -> Expression {
        var parser = try Parser(text)
        let expression = try parser.expression()
        guard parser.current.kind == .end else { throw parser.failure("end of expression") }
        return expression
    }

    // MARK: - Tokens

    private var current: Token { tokens[index] }

    private mutating func advance() { if index < tokens.count - 1 { index += 1 } }

    private func isKeyword(_ keyword: String, ahead: Int = 0) -> Bool {
        let position = min(index + ahead, tokens.count - 1)
        if case .word(let word) = tokens[position].kind { return word.uppercased() == keyword }
        return false
    }

    private func isSymbol(_ symbol: String) -> Bool { current.kind == .symbol(symbol) }

    private mutating func accept(_ keyword: String) -> Bool {
        guard isKeyword(keyword) else { return false }
        advance()
        return true
    }

    private mutating func acceptSymbol(_ symbol: String) -> Bool {
        guard isSymbol(symbol) else { return false }
        advance()
        return true
    }

    private func failure(_ expected: String) -> CouchetteError {
        CouchetteError(.invalidQuery, "expected \(expected) at offset \(current.offset), found \(current.describe)")
    }

    private mutating func expect(_ keyword: String) throws {
        guard accept(keyword) else { throw failure(keyword) }
    }

    private mutating func expectSymbol(_ symbol: String) throws {
        guard acceptSymbol(symbol) else { throw failure("'\(symbol)'") }
    }

    /// An identifier: a non-reserved word or a backquoted name.
    private mutating func identifier(_ what: String) throws -> String {
        switch current.kind {
        case .word(let word) where !Parser.reserved.contains(word.uppercased()):
            advance()
            return word
        case .quoted(let name):
            advance()
            return name
        default:
            throw failure(what)
        }
    }

    private var atIdentifier: Bool {
        switch current.kind {
        case .word(let word): !Parser.reserved.contains(word.uppercased())
        case .quoted: true
        default: false
        }
    }

    /// `AS alias` or a bare alias.
    private mutating func optionalAlias() throws -> String? {
        if accept("AS") { return try identifier("an alias after AS") }
        return atIdentifier ? try identifier("an alias") : nil
    }

    // MARK: - Statement

    mutating func statement() throws -> SelectStatement {
        try expect("SELECT")
        var distinct = false
        if accept("DISTINCT") { distinct = true } else { _ = accept("ALL") }
        var results: [ResultItem] = []
        repeat { results.append(try resultItem()) } while acceptSymbol(",")
        guard accept("FROM") else { throw failure(results.isEmpty ? "a result expression" : "',' or FROM") }
        var statement = SelectStatement(distinct: distinct, results: results, from: try dataSource())
        statement.joins = try joins()
        if accept("WHERE") { statement.whereClause = try expression() }
        if accept("GROUP") {
            try expect("BY")
            repeat { statement.groupBy.append(try expression()) } while acceptSymbol(",")
        }
        if accept("HAVING") { statement.having = try expression() }
        if accept("ORDER") {
            try expect("BY")
            repeat {
                let expression = try expression()
                var descending = false
                if accept("DESC") { descending = true } else { _ = accept("ASC") }
                statement.orderBy.append(OrderItem(expression: expression, descending: descending))
            } while acceptSymbol(",")
        }
        if accept("LIMIT") {
            statement.limit = try expression()
            if accept("OFFSET") { statement.offset = try expression() }
        } else if accept("OFFSET") {
            statement.offset = try expression()
            if accept("LIMIT") { statement.limit = try expression() }
        }
        _ = acceptSymbol(";")
        guard current.kind == .end else {
            throw failure(
                statement.limit == nil && statement.offset == nil
                    ? "a clause (WHERE, GROUP BY, ORDER BY, LIMIT …) or end of query" : "end of query")
        }
        return statement
    }

    private mutating func resultItem() throws -> ResultItem {
        if acceptSymbol("*") {
            return ResultItem(kind: .star, alias: try optionalAlias())
        }
        let value = try expression()
        return ResultItem(kind: .expression(value), alias: try optionalAlias())
    }

    private mutating func dataSource() throws -> DataSource {
        let offset = current.offset
        var path = [try identifier("a collection name")]
        if acceptSymbol(".") { path.append(try identifier("a collection name after '.'")) }
        return DataSource(path: path, alias: try optionalAlias(), offset: offset)
    }

    private mutating func joins() throws -> [JoinClause] {
        var joins: [JoinClause] = []
        while true {
            if accept("UNNEST") {
                let value = try expression()
                joins.append(.unnest(value, alias: try optionalAlias()))
                continue
            }
            let kind: JoinClause.Kind
            if accept("JOIN") {
                kind = .inner
            } else if accept("INNER") {
                try expect("JOIN")
                kind = .inner
            } else if accept("LEFT") {
                _ = accept("OUTER")
                try expect("JOIN")
                kind = .left
            } else if accept("CROSS") {
                try expect("JOIN")
                kind = .cross
            } else {
                return joins
            }
            let source = try dataSource()
            if kind == .cross {
                joins.append(.join(.cross, source, on: nil))
            } else {
                guard accept("ON") else { throw failure("ON after \(kind.rawValue) JOIN") }
                joins.append(.join(kind, source, on: try expression()))
            }
        }
    }

    // MARK: - Expressions

    /// The deepest expression tree accepted: `((((1))))` is 5 levels, `1 + 2 + 3` is 3 (a chain
    /// of operators nests to the left). The compiler, the evaluators and the tree's deallocation
    /// all recurse once per level, so this bounds their stack use on any thread (SQLite's limit
    /// is 1,000; a Swift task's stack is far smaller than a main thread's).
    static let maximumDepth = 256

    /// The most arguments one function call takes (LiteCore's limit; more is an error).
    static let maximumArguments = 128

    /// A parsed expression with its height (1 for a leaf), so depth is checked as the tree grows,
    /// before a tree too deep to compile, evaluate or even free is ever built.
    private struct Node {
        var expression: Expression
        var height: Int
    }

    /// Counts the parser's own recursion, which can go deeper than the tree it builds (`+ + 1`).
    private var nesting = 0

    mutating func expression() throws -> Expression { try node().expression }

    private mutating func node() throws -> Node {
        nesting += 1
        defer { nesting -= 1 }
        guard nesting <= Self.maximumDepth else { throw tooDeep() }
        return try orExpression()
    }

    private func tooDeep() -> CouchetteError {
        CouchetteError(.invalidQuery, "expression nested deeper than \(Self.maximumDepth) levels at offset \(current.offset)")
    }

    /// Builds a node over `children`, refusing it when it would be deeper than ``maximumDepth``.
    private func make(_ expression: Expression, _ children: [Node]) throws -> Node {
        let height = (children.map(\.height).max() ?? 0) + 1
        guard height <= Self.maximumDepth else { throw tooDeep() }
        return Node(expression: expression, height: height)
    }

    private func leaf(_ expression: Expression) -> Node { Node(expression: expression, height: 1) }

    private mutating func orExpression() throws -> Node {
        var result = try andExpression()
        while accept("OR") {
            let right = try andExpression()
            result = try make(.binary(.or, result.expression, right.expression), [result, right])
        }
        return result
    }

    private mutating func andExpression() throws -> Node {
        var result = try notExpression()
        while accept("AND") {
            let right = try notExpression()
            result = try make(.binary(.and, result.expression, right.expression), [result, right])
        }
        return result
    }

    private mutating func notExpression() throws -> Node {
        // NOT NOT … is a chain: counted here, built without recursion.
        var count = 0
        while accept("NOT") {
            count += 1
            guard count < Self.maximumDepth else { throw tooDeep() }
        }
        var result = try comparison()
        for _ in 0..<count { result = try make(.unary(.not, result.expression), [result]) }
        return result
    }

    private mutating func comparison() throws -> Node {
        let left = try concatenation()
        if case .symbol(let symbol) = current.kind {
            let comparisons: [String: Expression.BinaryOperator] = [
                "=": .equal, "==": .equal, "!=": .notEqual, "<>": .notEqual,
                "<": .less, "<=": .lessOrEqual, ">": .greater, ">=": .greaterOrEqual,
            ]
            if let op = comparisons[symbol] {
                advance()
                let right = try concatenation()
                return try make(.binary(op, left.expression, right.expression), [left, right])
            }
        }
        if accept("IS") {
            let negated = accept("NOT")
            let test: Expression.TypeTest
            if accept("NULL") {
                test = .null
            } else if accept("MISSING") {
                test = .missing
            } else if accept("VALUED") {
                test = .valued
            } else {
                // `IS` / `IS NOT` compare any two values, null-safe (as SQLite's IS does in LiteCore).
                let right = try concatenation()
                return try make(.identical(left.expression, right.expression, negated: negated), [left, right])
            }
            return try make(.isTest(left.expression, test, negated: negated), [left])
        }
        // `x NOT NULL` and `x NOT MISSING` are LiteCore's shorthands for `x IS NOT NULL` / `MISSING`.
        if isKeyword("NOT") && (isKeyword("NULL", ahead: 1) || isKeyword("MISSING", ahead: 1)) {
            advance()
            let test: Expression.TypeTest = isKeyword("NULL") ? .null : .missing
            advance()
            return try make(.isTest(left.expression, test, negated: true), [left])
        }
        let negated = isKeyword("NOT") && (isKeyword("LIKE", ahead: 1) || isKeyword("IN", ahead: 1) || isKeyword("BETWEEN", ahead: 1))
        if negated { advance() }
        if accept("LIKE") {
            let pattern = try concatenation()
            return try make(.like(left.expression, pattern.expression, negated: negated), [left, pattern])
        }
        if accept("IN") {
            let list = try concatenation()
            return try make(.inArray(left.expression, list.expression, negated: negated), [left, list])
        }
        if accept("BETWEEN") {
            let low = try concatenation()
            try expect("AND")
            let high = try concatenation()
            return try make(.between(left.expression, low.expression, high.expression, negated: negated), [left, low, high])
        }
        return left
    }

    private mutating func concatenation() throws -> Node {
        var result = try additive()
        while acceptSymbol("||") {
            let right = try additive()
            result = try make(.binary(.concat, result.expression, right.expression), [result, right])
        }
        return result
    }

    private mutating func additive() throws -> Node {
        var result = try multiplicative()
        while true {
            let op: Expression.BinaryOperator
            if acceptSymbol("+") { op = .add } else if acceptSymbol("-") { op = .subtract } else { return result }
            let right = try multiplicative()
            result = try make(.binary(op, result.expression, right.expression), [result, right])
        }
    }

    private mutating func multiplicative() throws -> Node {
        var result = try unary()
        while true {
            let op: Expression.BinaryOperator
            if acceptSymbol("*") {
                op = .multiply
            } else if acceptSymbol("/") {
                op = .divide
            } else if acceptSymbol("%") {
                op = .modulo
            } else {
                return result
            }
            let right = try unary()
            result = try make(.binary(op, result.expression, right.expression), [result, right])
        }
    }

    private mutating func unary() throws -> Node {
        // A run of signs is read in a loop (no recursion), then applied innermost first.
        var negations: [Bool] = []
        while true {
            if acceptSymbol("-") { negations.append(true) } else if acceptSymbol("+") { negations.append(false) } else { break }
            guard negations.count < Self.maximumDepth else { throw tooDeep() }
        }
        var result = try postfix()
        for negate in negations.reversed() where negate {
            switch result.expression {
            case .literal(.int(let number)) where number != .min: result = leaf(.literal(.int(-number)))
            case .literal(.double(let number)): result = leaf(.literal(.double(-number)))
            default: result = try make(.unary(.negate, result.expression), [result])
            }
        }
        return result
    }

    private mutating func postfix() throws -> Node {
        var result = try primary()
        while true {
            if acceptSymbol(".") {
                if acceptSymbol("*") {
                    result = try make(.allProperties(result.expression), [result])
                    continue
                }
                result = try make(.member(result.expression, try identifier("a property name after '.'")), [result])
            } else if acceptSymbol("[") {
                let subscriptValue = try node()
                try expectSymbol("]")
                result = try make(.subscripted(result.expression, subscriptValue.expression), [result, subscriptValue])
            } else if accept("COLLATE") {
                result = try make(.collate(result.expression, try collation()), [result])
            } else {
                return result
            }
        }
    }

    private mutating func collation() throws -> Collation {
        var collation = Collation()
        func word(_ parser: inout Parser) throws {
            let start = parser.current
            var name = try parser.collationWord()
            if parser.acceptSymbol(":") { name += ":" + (try parser.collationWord()) }
            guard collation.apply(name) else {
                throw CouchetteError(
                    .invalidQuery, "expected a collation (UNICODE, NOCASE, NODIAC, CASE, DIAC) at offset \(start.offset), found '\(name)'")
            }
        }
        if acceptSymbol("(") {
            repeat { try word(&self) } while !acceptSymbol(")")
        } else {
            try word(&self)
        }
        return collation
    }

    private mutating func collationWord() throws -> String {
        switch current.kind {
        case .word(let word), .quoted(let word):
            advance()
            return word
        default:
            throw failure("a collation (UNICODE, NOCASE, NODIAC, CASE, DIAC)")
        }
    }

    private mutating func primary() throws -> Node {
        let token = current
        switch token.kind {
        case .integer(let number):
            advance()
            return leaf(.literal(.int(number)))
        case .largeInteger(let number):
            advance()
            return leaf(.literal(.largeInteger(number)))
        case .double(let number):
            advance()
            return leaf(.literal(.double(number)))
        case .string(let text):
            advance()
            return leaf(.literal(.string(text)))
        case .parameter(let name):
            advance()
            return leaf(.parameter(name))
        case .quoted(let name):
            advance()
            return leaf(.identifier(name))
        case .symbol("("):
            advance()
            let first = try node()
            if acceptSymbol(")") { return first }
            var elements = [first]
            while acceptSymbol(",") { elements.append(try node()) }
            try expectSymbol(")")
            return try make(.array(elements.map(\.expression)), elements)
        case .symbol("["):
            advance()
            var elements: [Node] = []
            if !acceptSymbol("]") {
                repeat { elements.append(try node()) } while acceptSymbol(",")
                try expectSymbol("]")
            }
            return try make(.array(elements.map(\.expression)), elements)
        case .symbol("{"):
            advance()
            var keys: [String] = []
            var values: [Node] = []
            if !acceptSymbol("}") {
                repeat {
                    switch current.kind {
                    case .string(let text), .quoted(let text), .word(let text):
                        keys.append(text)
                        advance()
                    default: throw failure("a string key in an object literal")
                    }
                    try expectSymbol(":")
                    values.append(try node())
                } while acceptSymbol(",")
                try expectSymbol("}")
            }
            return try make(.object(Array(zip(keys, values.map(\.expression)))), values)
        case .word(let word):
            return try wordPrimary(word, token)
        default:
            throw failure("an expression")
        }
    }

    private mutating func wordPrimary(_ word: String, _ token: Token) throws -> Node {
        switch word.uppercased() {
        case "NULL": advance(); return leaf(.literal(.null))
        case "MISSING": advance(); return leaf(.missing)
        case "TRUE": advance(); return leaf(.literal(.bool(true)))
        case "FALSE": advance(); return leaf(.literal(.bool(false)))
        case "CASE": advance(); return try caseExpression()
        case "ANY", "SOME", "EVERY": return try quantified()
        case "EXISTS":
            advance()
            nesting += 1
            defer { nesting -= 1 }
            guard nesting <= Self.maximumDepth else { throw tooDeep() }
            let operand = try postfix()
            return try make(.exists(operand.expression), [operand])
        default: break
        }
        guard !Parser.reserved.contains(word.uppercased()) else { throw failure("an expression") }
        advance()
        guard acceptSymbol("(") else { return leaf(.identifier(word)) }
        if word.uppercased() == "META" {
            let alias = isSymbol(")") ? nil : try identifier("a collection alias in META()")
            try expectSymbol(")")
            return leaf(.meta(alias))
        }
        if acceptSymbol("*") {
            try expectSymbol(")")
            return leaf(.function(name: word.uppercased(), arguments: [], distinct: false, star: true, offset: token.offset))
        }
        let distinct = accept("DISTINCT")
        var arguments: [Node] = []
        if !acceptSymbol(")") {
            repeat {
                guard arguments.count < Self.maximumArguments else {
                    throw CouchetteError(
                        .invalidQuery, "\(word.uppercased())() at offset \(token.offset) has more than \(Self.maximumArguments) arguments")
                }
                arguments.append(try node())
            } while acceptSymbol(",")
            guard acceptSymbol(")") else { throw failure("',' or ')' in the arguments of \(word.uppercased())()") }
        }
        return try make(
            .function(
                name: word.uppercased(), arguments: arguments.map(\.expression), distinct: distinct,
                star: false, offset: token.offset), arguments)
    }

    private mutating func caseExpression() throws -> Node {
        let subject = isKeyword("WHEN") ? nil : try node()
        var children = subject.map { [$0] } ?? []
        var whens: [(Expression, Expression)] = []
        while accept("WHEN") {
            let condition = try node()
            try expect("THEN")
            let result = try node()
            whens.append((condition.expression, result.expression))
            children += [condition, result]
        }
        guard !whens.isEmpty else { throw failure("WHEN") }
        let otherwise = accept("ELSE") ? try node() : nil
        if let otherwise { children.append(otherwise) }
        try expect("END")
        return try make(.caseWhen(subject: subject?.expression, whens: whens, otherwise: otherwise?.expression), children)
    }

    private mutating func quantified() throws -> Node {
        var quantifier: Expression.Quantifier = .any
        if accept("EVERY") {
            quantifier = .every
        } else {
            advance()  // ANY or SOME
            if accept("AND") {
                try expect("EVERY")
                quantifier = .anyAndEvery
            }
        }
        let variable = try identifier("a variable name after \(quantifier.rawValue)")
        try expect("IN")
        let source = try node()
        try expect("SATISFIES")
        let condition = try node()
        try expect("END")
        return try make(
            .quantified(quantifier, variable: variable, source: source.expression, condition: condition.expression),
            [source, condition])
    }
}
