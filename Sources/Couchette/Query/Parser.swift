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
            throw failure(statement.limit == nil && statement.offset == nil ? "a clause (WHERE, GROUP BY, ORDER BY, LIMIT …) or end of query" : "end of query")
        }
        return statement
    }

    private mutating func resultItem() throws -> ResultItem {
        if acceptSymbol("*") {
            return ResultItem(kind: .star, alias: accept("AS") ? try identifier("an alias after AS") : nil)
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

    mutating func expression() throws -> Expression { try orExpression() }

    private mutating func orExpression() throws -> Expression {
        var result = try andExpression()
        while accept("OR") { result = .binary(.or, result, try andExpression()) }
        return result
    }

    private mutating func andExpression() throws -> Expression {
        var result = try notExpression()
        while accept("AND") { result = .binary(.and, result, try notExpression()) }
        return result
    }

    private mutating func notExpression() throws -> Expression {
        if accept("NOT") { return .unary(.not, try notExpression()) }
        return try comparison()
    }

    private mutating func comparison() throws -> Expression {
        let left = try concatenation()
        if case .symbol(let symbol) = current.kind {
            let comparisons: [String: Expression.BinaryOperator] = [
                "=": .equal, "==": .equal, "!=": .notEqual, "<>": .notEqual,
                "<": .less, "<=": .lessOrEqual, ">": .greater, ">=": .greaterOrEqual,
            ]
            if let op = comparisons[symbol] {
                advance()
                return .binary(op, left, try concatenation())
            }
        }
        if accept("IS") {
            let negated = accept("NOT")
            if accept("NULL") { return .isTest(left, .null, negated: negated) }
            if accept("MISSING") { return .isTest(left, .missing, negated: negated) }
            if accept("VALUED") { return .isTest(left, .valued, negated: negated) }
            throw failure("NULL, MISSING or VALUED after IS\(negated ? " NOT" : "")")
        }
        let negated = isKeyword("NOT") && (isKeyword("LIKE", ahead: 1) || isKeyword("IN", ahead: 1) || isKeyword("BETWEEN", ahead: 1))
        if negated { advance() }
        if accept("LIKE") { return .like(left, try concatenation(), negated: negated) }
        if accept("IN") { return .inArray(left, try concatenation(), negated: negated) }
        if accept("BETWEEN") {
            let low = try concatenation()
            try expect("AND")
            return .between(left, low, try concatenation(), negated: negated)
        }
        return left
    }

    private mutating func concatenation() throws -> Expression {
        var result = try additive()
        while acceptSymbol("||") { result = .binary(.concat, result, try additive()) }
        return result
    }

    private mutating func additive() throws -> Expression {
        var result = try multiplicative()
        while true {
            if acceptSymbol("+") { result = .binary(.add, result, try multiplicative()) }
            else if acceptSymbol("-") { result = .binary(.subtract, result, try multiplicative()) }
            else { return result }
        }
    }

    private mutating func multiplicative() throws -> Expression {
        var result = try unary()
        while true {
            if acceptSymbol("*") { result = .binary(.multiply, result, try unary()) }
            else if acceptSymbol("/") { result = .binary(.divide, result, try unary()) }
            else if acceptSymbol("%") { result = .binary(.modulo, result, try unary()) }
            else { return result }
        }
    }

    private mutating func unary() throws -> Expression {
        if acceptSymbol("-") {
            let operand = try unary()
            switch operand {
            case .literal(.int(let number)) where number != .min: return .literal(.int(-number))
            case .literal(.double(let number)): return .literal(.double(-number))
            default: return .unary(.negate, operand)
            }
        }
        if acceptSymbol("+") { return try unary() }
        return try postfix()
    }

    private mutating func postfix() throws -> Expression {
        var result = try primary()
        while true {
            if acceptSymbol(".") {
                if acceptSymbol("*") {
                    result = .allProperties(result)
                    continue
                }
                result = .member(result, try identifier("a property name after '.'"))
            } else if acceptSymbol("[") {
                let subscriptValue = try expression()
                try expectSymbol("]")
                result = .subscripted(result, subscriptValue)
            } else if accept("COLLATE") {
                result = .collate(result, try collation())
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
                throw CouchetteError(.invalidQuery, "expected a collation (UNICODE, NOCASE, NODIAC, CASE, DIAC) at offset \(start.offset), found '\(name)'")
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

    private mutating func primary() throws -> Expression {
        let token = current
        switch token.kind {
        case .integer(let number):
            advance()
            return .literal(.int(number))
        case .largeInteger(let number):
            advance()
            return .literal(.largeInteger(number))
        case .double(let number):
            advance()
            return .literal(.double(number))
        case .string(let text):
            advance()
            return .literal(.string(text))
        case .parameter(let name):
            advance()
            return .parameter(name)
        case .quoted(let name):
            advance()
            return .identifier(name)
        case .symbol("("):
            advance()
            let first = try expression()
            if acceptSymbol(")") { return first }
            var elements = [first]
            while acceptSymbol(",") { elements.append(try expression()) }
            try expectSymbol(")")
            return .array(elements)
        case .symbol("["):
            advance()
            var elements: [Expression] = []
            if !acceptSymbol("]") {
                repeat { elements.append(try expression()) } while acceptSymbol(",")
                try expectSymbol("]")
            }
            return .array(elements)
        case .symbol("{"):
            advance()
            var entries: [(String, Expression)] = []
            if !acceptSymbol("}") {
                repeat {
                    let key: String
                    switch current.kind {
                    case .string(let text), .quoted(let text), .word(let text):
                        key = text
                        advance()
                    default: throw failure("a string key in an object literal")
                    }
                    try expectSymbol(":")
                    entries.append((key, try expression()))
                } while acceptSymbol(",")
                try expectSymbol("}")
            }
            return .object(entries)
        case .word(let word):
            return try wordPrimary(word, token)
        default:
            throw failure("an expression")
        }
    }

    private mutating func wordPrimary(_ word: String, _ token: Token) throws -> Expression {
        switch word.uppercased() {
        case "NULL": advance(); return .literal(.null)
        case "MISSING": advance(); return .missing
        case "TRUE": advance(); return .literal(.bool(true))
        case "FALSE": advance(); return .literal(.bool(false))
        case "CASE": advance(); return try caseExpression()
        case "ANY", "SOME", "EVERY": return try quantified()
        case "EXISTS":
            advance()
            return .exists(try postfix())
        default: break
        }
        guard !Parser.reserved.contains(word.uppercased()) else { throw failure("an expression") }
        advance()
        guard acceptSymbol("(") else { return .identifier(word) }
        if word.uppercased() == "META" {
            let alias = isSymbol(")") ? nil : try identifier("a collection alias in META()")
            try expectSymbol(")")
            return .meta(alias)
        }
        if acceptSymbol("*") {
            try expectSymbol(")")
            return .function(name: word.uppercased(), arguments: [], distinct: false, star: true, offset: token.offset)
        }
        let distinct = accept("DISTINCT")
        var arguments: [Expression] = []
        if !acceptSymbol(")") {
            repeat { arguments.append(try expression()) } while acceptSymbol(",")
            guard acceptSymbol(")") else { throw failure("',' or ')' in the arguments of \(word.uppercased())()") }
        }
        return .function(name: word.uppercased(), arguments: arguments, distinct: distinct, star: false, offset: token.offset)
    }

    private mutating func caseExpression() throws -> Expression {
        let subject = isKeyword("WHEN") ? nil : try expression()
        var whens: [(Expression, Expression)] = []
        while accept("WHEN") {
            let condition = try expression()
            try expect("THEN")
            whens.append((condition, try expression()))
        }
        guard !whens.isEmpty else { throw failure("WHEN") }
        let otherwise = accept("ELSE") ? try expression() : nil
        try expect("END")
        return .caseWhen(subject: subject, whens: whens, otherwise: otherwise)
    }

    private mutating func quantified() throws -> Expression {
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
        let source = try expression()
        try expect("SATISFIES")
        let condition = try expression()
        try expect("END")
        return .quantified(quantifier, variable: variable, source: source, condition: condition)
    }
}
