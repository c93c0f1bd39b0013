/// The syntax tree of one SQL++ SELECT statement, as the ``Parser`` produces it.
///
/// Names are not resolved here: `a.b` is a member access on the identifier `a`, which the
/// ``QueryCompiler`` later resolves to a FROM alias, an ANY/EVERY variable, a SELECT alias or a
/// property of the main document.
struct SelectStatement: Sendable {
    var distinct = false
    var results: [ResultItem] = []
    var from: DataSource
    var joins: [JoinClause] = []
    var whereClause: Expression?
    var groupBy: [Expression] = []
    var having: Expression?
    var orderBy: [OrderItem] = []
    var limit: Expression?
    var offset: Expression?
}

struct ResultItem: Sendable {
    enum Kind: Sendable {
        /// `*`: the main source's body.
        case star
        case expression(Expression)
    }
    var kind: Kind
    var alias: String?
}

/// A collection named in FROM or JOIN: one or two identifiers, and an optional alias.
struct DataSource: Sendable {
    var path: [String]
    var alias: String?
    var offset: Int
}

enum JoinClause: Sendable {
    enum Kind: String, Sendable { case inner = "INNER", left = "LEFT OUTER", cross = "CROSS" }
    case join(Kind, DataSource, on: Expression?)
    case unnest(Expression, alias: String?)
}

struct OrderItem: Sendable {
    var expression: Expression
    var descending: Bool
}

indirect enum Expression: Sendable {
    enum UnaryOperator: String, Sendable { case negate = "-", not = "NOT" }
    enum BinaryOperator: String, Sendable {
        case add = "+", subtract = "-", multiply = "*", divide = "/", modulo = "%", concat = "||"
        case equal = "=", notEqual = "!=", less = "<", lessOrEqual = "<=", greater = ">", greaterOrEqual = ">="
        case and = "AND", or = "OR"
    }
    enum TypeTest: String, Sendable { case null = "NULL", missing = "MISSING", valued = "VALUED" }
    enum Quantifier: String, Sendable { case any = "ANY", every = "EVERY", anyAndEvery = "ANY AND EVERY" }

    case literal(Value)
    case missing
    case parameter(String)
    case identifier(String)
    case member(Expression, String)
    case subscripted(Expression, Expression)
    /// `alias.*` in a result list.
    case allProperties(Expression)
    /// `META()` or `META(alias)`.
    case meta(String?)
    case array([Expression])
    case object([(String, Expression)])
    case unary(UnaryOperator, Expression)
    case binary(BinaryOperator, Expression, Expression)
    case isTest(Expression, TypeTest, negated: Bool)
    /// `a IS b` / `a IS NOT b` for any `b` but NULL, MISSING and VALUED: null-safe equality,
    /// always true or false (MISSING IS MISSING, null IS null).
    case identical(Expression, Expression, negated: Bool)
    case like(Expression, Expression, negated: Bool)
    case inArray(Expression, Expression, negated: Bool)
    case between(Expression, Expression, Expression, negated: Bool)
    case caseWhen(subject: Expression?, whens: [(Expression, Expression)], otherwise: Expression?)
    case quantified(Quantifier, variable: String, source: Expression, condition: Expression)
    case exists(Expression)
    case function(name: String, arguments: [Expression], distinct: Bool, star: Bool, offset: Int)
    case collate(Expression, Collation)
}
