/// A compiled expression: evaluates against the current row and returns a value, or nil for MISSING.
///
/// Evaluators are built once per ``Query`` by the ``QueryCompiler`` and shared by every execution;
/// everything that changes between rows or executions lives in the ``EvaluationContext``.
typealias Evaluator = @Sendable (EvaluationContext) throws -> Datum?

/// One document (or UNNEST element) bound to a FROM/JOIN/UNNEST alias in the current row.
struct SourceBinding: Sendable {
    var id: String
    var sequence: UInt64
    /// Formatted only when the query reads `META().revisionID`.
    var revision: StoredRevisionID
    var isDeleted: Bool
    /// Milliseconds since 1970, 0 for none.
    var expiration: UInt64
    var body: Datum

    var revisionID: String { revision.text }

    /// An UNNEST element: a value without document metadata.
    static func element(_ value: Datum) -> SourceBinding {
        SourceBinding(id: "", sequence: 0, revision: .text(""), isDeleted: false, expiration: 0, body: value)
    }
}

/// What evaluators read: the current row's sources, ANY/EVERY variables, the current group's
/// aggregate values, and the parameters of this execution.
///
/// One context lives for one execution on one thread and is mutated in place as rows go by.
///
/// Unchecked exclusivity on what changes per row: one execution on one thread owns the context,
/// and its fields are assigned or read, never passed `inout` while an evaluator runs, so
/// accesses cannot overlap; the runtime check ran at every source bound and variable read.
final class EvaluationContext {
    @exclusivity(unchecked) var sources: [SourceBinding?]
    @exclusivity(unchecked) var variables: [Datum?]
    @exclusivity(unchecked) var aggregates: [Datum?] = []
    let parameters: [String: Datum]
    /// The values of ``QueryPlan/parameterOrder``, looked up by name once per execution instead
    /// of hashing the name at every row.
    let parameterValues: [Datum?]
    /// Set by a ``FullTextScan`` for the rows it delivers: every MATCH of the WHERE holds for
    /// them, and `fullTextRanks[slot]` is the BM25 score of MATCH number `slot`.
    var fullTextMatched = false
    var fullTextRanks: [Double] = []

    init(sourceCount: Int, variableCount: Int, parameters: [String: Datum], parameterValues: [Datum?]) {
        sources = Array(repeating: nil, count: sourceCount)
        variables = Array(repeating: nil, count: variableCount)
        self.parameters = parameters
        self.parameterValues = parameterValues
    }

    convenience init(sourceCount: Int, variableCount: Int, parameters: [String: Datum], parameterOrder: [String] = []) {
        self.init(
            sourceCount: sourceCount, variableCount: variableCount, parameters: parameters,
            parameterValues: parameterOrder.map { parameters[$0] })
    }

    /// A context for one execution of `plan`; `slots`, when the caller has them, are the values
    /// of ``QueryPlan/parameterOrder`` already looked up (``Parameters/fill(_:from:for:)``).
    convenience init(_ plan: QueryPlan, parameters: [String: Datum], slots: [Datum?]? = nil) {
        self.init(
            sourceCount: plan.sources.count, variableCount: plan.variableCount, parameters: parameters,
            parameterValues: slots ?? plan.parameterOrder.map { parameters[$0] })
    }

    /// A context that evaluates only the constants of `plan` (literals, parameters: LIMIT, OFFSET,
    /// the values an index range is bounded by): no source or variable slots to allocate. Every
    /// parameter such a constant reads has a slot (the compiler lists each one the statement
    /// uses), so no values by name are needed.
    convenience init(constantsOf plan: QueryPlan, slots: [Datum?]) {
        self.init(sourceCount: 0, variableCount: 0, parameters: [:], parameterValues: slots)
    }

    /// The parameter in `slot`, else (a constant compiled apart from the plan, whose slots the
    /// plan does not list) by `name`.
    func parameter(_ slot: Int, _ name: String) -> Datum? {
        slot < parameterValues.count ? parameterValues[slot] : parameters[name]
    }
}

/// Shared operator semantics (comparisons, arithmetic, three-valued logic), used by the compiled
/// operators and by the function library.
enum Operators {
    /// `=`: MISSING if either side is MISSING; null equals null (Couchbase Lite); numbers compare
    /// numerically; different types are unequal.
    static func equal(_ lhs: Datum?, _ rhs: Datum?, _ collation: Collation = .binary) -> Datum? {
        guard let lhs, let rhs else { return nil }
        if lhs.isNull || rhs.isNull { return .bool(lhs.isNull && rhs.isNull) }
        return .bool(lhs.kind == rhs.kind && ValueOrder.compare(lhs, rhs, collation) == 0)
    }

    /// `<`, `<=`, `>`, `>=`: MISSING or null operands give MISSING or null; values of different
    /// types compare in N1QL's type order.
    static func compare(_ lhs: Datum?, _ rhs: Datum?, _ collation: Collation, _ accept: (Int) -> Bool) -> Datum? {
        guard let lhs, let rhs else { return nil }
        if lhs.isNull || rhs.isNull { return .null }
        return .bool(accept(ValueOrder.compare(lhs, rhs, collation)))
    }

    static func and(_ lhs: Datum?, _ rhs: () throws -> Datum?) rethrows -> Datum? {
        if let lhs, !lhs.isNull, !lhs.isTruthy { return .bool(false) }
        let right = try rhs()
        if let right, !right.isNull, !right.isTruthy { return .bool(false) }
        guard let lhs, let right else { return nil }
        if lhs.isNull || right.isNull { return .null }
        return .bool(true)
    }

    static func or(_ lhs: Datum?, _ rhs: () throws -> Datum?) rethrows -> Datum? {
        if let lhs, !lhs.isNull, lhs.isTruthy { return .bool(true) }
        let right = try rhs()
        if let right, !right.isNull, right.isTruthy { return .bool(true) }
        if lhs?.isNull == true || right?.isNull == true { return .null }
        if lhs == nil || right == nil { return nil }
        return .bool(false)
    }

    static func not(_ operand: Datum?) -> Datum? {
        guard let operand else { return nil }
        return operand.isNull ? .null : .bool(!operand.isTruthy)
    }

    /// Arithmetic: MISSING and null propagate, non-numbers give null; integer op integer stays an
    /// integer (`/` divides integers, as in Couchbase Lite) unless it overflows; division by zero
    /// gives null.
    static func arithmetic(_ op: Expression.BinaryOperator, _ lhs: Datum?, _ rhs: Datum?) -> Datum? {
        guard let lhs, let rhs else { return nil }
        if case .int(let a) = lhs, case .int(let b) = rhs {
            switch op {
            case .add:
                let (result, overflow) = a.addingReportingOverflow(b)
                return overflow ? .number(Double(a) + Double(b)) : .int(result)
            case .subtract:
                let (result, overflow) = a.subtractingReportingOverflow(b)
                return overflow ? .number(Double(a) - Double(b)) : .int(result)
            case .multiply:
                let (result, overflow) = a.multipliedReportingOverflow(by: b)
                return overflow ? .number(Double(a) * Double(b)) : .int(result)
            case .divide:
                guard b != 0 else { return .null }
                let (result, overflow) = a.dividedReportingOverflow(by: b)
                return overflow ? .number(Double(a) / Double(b)) : .int(result)
            case .modulo:
                guard b != 0 else { return .null }
                let (result, overflow) = a.remainderReportingOverflow(dividingBy: b)
                return overflow ? .int(0) : .int(result)
            default: return .null
            }
        }
        guard let a = lhs.number, let b = rhs.number else { return .null }
        switch op {
        case .add: return .number(a + b)
        case .subtract: return .number(a - b)
        case .multiply: return .number(a * b)
        case .divide: return b == 0 ? .null : .number(a / b)
        case .modulo: return b == 0 ? .null : .number(a.truncatingRemainder(dividingBy: b))
        default: return .null
        }
    }

    /// `||`: LiteCore turns it into CONCAT(), so it converts the same way (MISSING propagates).
    static func concat(_ lhs: Datum?, _ rhs: Datum?) -> Datum? {
        if case .string(let a)? = lhs, case .string(let b)? = rhs { return .string(a + b) }
        return FunctionLibrary.concatenate([lhs, rhs])
    }

    /// The rows UNNEST makes of a value, as LiteCore's fl_each does: an array's elements, a
    /// dictionary's values (in key order), one row for any other value (null included), none
    /// for MISSING.
    static func unnested(_ value: Datum?) -> [Datum] {
        guard let value else { return [] }
        switch value.kind {
        case .array, .object: return members(value)
        default: return [value]
        }
    }

    /// The values ANY/EVERY iterate: an array's elements, a dictionary's values (in key order).
    static func members(_ value: Datum?) -> [Datum] {
        guard let value else { return [] }
        if let elements = value.elements { return elements }
        if let entries = value.entries { return ValueEncoder.sortedKeys(entries.keys).map { entries[$0]! } }
        return []
    }
}

/// LIKE matching: `%` any run, `_` one character, backslash escapes the next character.
/// Case-sensitive unless a collation says otherwise.
enum LikePattern {
    static func matches(_ text: String, _ pattern: String, _ collation: Collation) -> Bool {
        Compiled(pattern, collation).matches(text)
    }

    /// Matching Character by Character (canonical equivalence, grapheme clusters).
    static func characterMatch(_ text: String, _ pattern: String, _ collation: Collation) -> Bool {
        match(Array(collation.fold(text)), tokens(Array(collation.fold(pattern)), percent: "%", underscore: "_", escape: "\\"))
    }

    /// A pattern taken apart once — a constant pattern is compiled with its query, not per row.
    struct Compiled: Sendable {
        private let pattern: String
        private let collation: Collation
        /// The pattern's byte tokens when bytes can be matched (binary collation, ASCII without
        /// CR: there every byte is one Character, CR LF would be one), else nil.
        private let asciiTokens: [Token<UInt8>]?

        init(_ pattern: String, _ collation: Collation) {
            self.pattern = pattern
            self.collation = collation
            let bytes = Array(pattern.utf8)
            asciiTokens =
                collation.isBinary && LikePattern.isPlain(bytes)
                ? LikePattern.tokens(bytes, percent: UInt8(ascii: "%"), underscore: UInt8(ascii: "_"), escape: UInt8(ascii: "\\"))
                : nil
        }

        func matches(_ text: String) -> Bool {
            if asciiTokens != nil {
                var text = text
                if let result = text.withUTF8({ matchesBytes(UnsafeRawBufferPointer($0)) }) { return result }
            }
            return LikePattern.characterMatch(text, pattern, collation)
        }

        /// Whether ``matchesBytes(_:)`` can answer at all: binary collation, a plain ASCII pattern.
        var matchesPlainBytes: Bool { asciiTokens != nil }

        /// Matches text given as its UTF-8 bytes (a stored string, read in place); nil when the
        /// pattern or the text is not plain ASCII, where only ``matches(_:)`` is right.
        func matchesBytes(_ bytes: UnsafeRawBufferPointer) -> Bool? {
            guard let asciiTokens, LikePattern.isPlain(bytes) else { return nil }
            return LikePattern.match(bytes, asciiTokens)
        }
    }

    private static func isPlain(_ bytes: some Sequence<UInt8>) -> Bool { bytes.allSatisfy { $0 < 0x80 && $0 != 0x0D } }

    /// One element of a LIKE pattern, escapes resolved.
    fileprivate enum Token<Unit: Equatable & Sendable>: Equatable, Sendable {
        case anyRun
        case anyOne
        case literal(Unit)
    }

    /// The tokens of a pattern over any units: `percent` matches any run, `underscore` one unit,
    /// `escape` makes the next unit literal. Characters in general; bytes on the ASCII path.
    private static func tokens<Unit: Equatable & Sendable>(
        _ pattern: [Unit], percent: Unit, underscore: Unit, escape: Unit
    ) -> [Token<Unit>] {
        var tokens: [Token<Unit>] = []
        var units = pattern[...]
        while let unit = units.popFirst() {
            switch unit {
            case percent: if tokens.last != .anyRun { tokens.append(.anyRun) }
            case underscore: tokens.append(.anyOne)
            case escape where !units.isEmpty: tokens.append(.literal(units.removeFirst()))
            default: tokens.append(.literal(unit))
            }
        }
        return tokens
    }

    /// Runs in O(text × pattern) time without recursion: on a mismatch only the most recent `%`
    /// is retried one unit further on (an earlier `%` never needs a retry, since the later one
    /// can absorb anything it would have), so `%a%a%a…%b` cannot backtrack exponentially.
    private static func match<Subject: RandomAccessCollection>(_ subject: Subject, _ tokens: [Token<Subject.Element>]) -> Bool
    where Subject.Index == Int, Subject.Element: Equatable & Sendable {
        let start = subject.startIndex, count = subject.count
        var position = 0, token = 0
        // The latest `%` seen, and the text position its current attempt resumes after.
        var retry: (token: Int, position: Int)?
        while position < count {
            if token < tokens.count {
                switch tokens[token] {
                case .anyRun:
                    retry = (token, position)
                    token += 1
                    continue
                case .anyOne:
                    position += 1
                    token += 1
                    continue
                case .literal(let unit) where unit == subject[start + position]:
                    position += 1
                    token += 1
                    continue
                case .literal:
                    break
                }
            }
            guard let last = retry else { return false }
            retry = (last.token, last.position + 1)
            token = last.token + 1
            position = last.position + 1
        }
        return tokens[token...].allSatisfy { $0 == .anyRun }
    }
}
