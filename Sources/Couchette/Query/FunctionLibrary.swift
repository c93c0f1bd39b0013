import Foundation

/// A scalar SQL++ function: how many arguments it takes and what it computes.
struct QueryFunction: Sendable {
    var arity: ClosedRange<Int>
    /// When true (most functions), a MISSING argument makes the result MISSING and a null one
    /// null, before `body` runs.
    var propagatesMissingAndNull: Bool
    var body: @Sendable ([Datum?]) throws -> Datum?
}

/// The scalar functions of Couchbase Lite's SQL++, by upper-case name (`IS_ARRAY` and `TO_ARRAY`
/// spellings included). Aggregates (`COUNT`, `SUM`, …) are compiled separately.
enum FunctionLibrary {
    static let functions: [String: QueryFunction] = {
        var table: [String: QueryFunction] = [:]
        func strict(_ name: String, _ arity: ClosedRange<Int>, _ body: @escaping @Sendable ([Datum]) throws -> Datum?) {
            table[name] = QueryFunction(arity: arity, propagatesMissingAndNull: true) { values in try body(values.map { $0! }) }
        }
        func lenient(_ name: String, _ arity: ClosedRange<Int>, _ body: @escaping @Sendable ([Datum?]) throws -> Datum?) {
            table[name] = QueryFunction(arity: arity, propagatesMissingAndNull: false, body: body)
        }
        addMath(strict)
        addStrings(strict, lenient)
        addConditionals(lenient)
        addArrays(strict, lenient)
        addTypes(strict, lenient)
        addRegex(strict)
        DateFunctions.add(strict)
        VectorFunctions.add(lenient)
        for name in Array(table.keys) where name.hasPrefix("IS") && !name.hasPrefix("IS_") && name != "ISATOM" || name.hasPrefix("TO") {
            let underscored = name.hasPrefix("IS") ? "IS_" + name.dropFirst(2) : "TO_" + name.dropFirst(2)
            table[String(underscored)] = table[name]
        }
        table["IS_ATOM"] = table["ISATOM"]
        table["TYPENAME"] = table["TYPE"]
        return table
    }()

    typealias Strict = (String, ClosedRange<Int>, @escaping @Sendable ([Datum]) throws -> Datum?) -> Void
    typealias Lenient = (String, ClosedRange<Int>, @escaping @Sendable ([Datum?]) throws -> Datum?) -> Void

    // MARK: - Math

    private static func addMath(_ strict: Strict) {
        func unary(_ name: String, _ operation: @escaping @Sendable (Double) -> Double) {
            strict(name, 1...1) { values in values[0].number.map { .number(operation($0)) } ?? .null }
        }
        unary("ACOS", acos); unary("ASIN", asin); unary("ATAN", atan); unary("COS", cos); unary("SIN", sin)
        unary("TAN", tan); unary("EXP", exp); unary("LN", log); unary("LOG", log10); unary("SQRT", sqrt)
        unary("DEGREES") { $0 * 180 / .pi }
        unary("RADIANS") { $0 * .pi / 180 }
        strict("PI", 0...0) { _ in .double(.pi) }
        strict("E", 0...0) { _ in .double(M_E) }
        strict("ATAN2", 2...2) { values in
            guard let y = values[0].number, let x = values[1].number else { return .null }
            return .number(atan2(y, x))
        }
        strict("POWER", 2...2) { values in
            guard let base = values[0].number, let exponent = values[1].number else { return .null }
            return .number(pow(base, exponent))
        }
        strict("ABS", 1...1) { values in
            switch values[0] {
            case .int(let number): return number == .min ? .number(-Double(number)) : .int(abs(number))
            case .double(let number): return .number(abs(number))
            case .largeInteger(let number): return number.isNegative ? Datum(number.negated) : values[0]
            default: return .null
            }
        }
        strict("SIGN", 1...1) { values in
            guard let number = values[0].number else { return .null }
            return .int(number > 0 ? 1 : number < 0 ? -1 : 0)
        }
        func rounding(_ name: String, _ rule: FloatingPointRoundingRule) {
            strict(name, 1...2) { values in
                if case .int = values[0], values.count == 1 { return values[0] }
                guard let number = values[0].number else { return .null }
                // A double has no digits beyond 10^±308: more are the same as that many.
                let digits = values.count > 1 ? min(max(values[1].number.flatMap(wholeNumber) ?? 0, -308), 308) : 0
                let scale = pow(10, Double(digits))
                let scaled = number * scale
                // Asking for more digits than the double holds leaves it as it is.
                guard scaled.isFinite else { return .number(number) }
                let result = scaled.rounded(rule) / scale
                if digits <= 0, let exact = Int64(exactly: result) { return .int(exact) }
                return .number(result)
            }
        }
        rounding("ROUND", .toNearestOrAwayFromZero)
        rounding("ROUND_EVEN", .toNearestOrEven)
        rounding("TRUNC", .towardZero)
        rounding("CEIL", .up)
        rounding("FLOOR", .down)
        strict("DIV", 2...2) { values in
            guard let a = values[0].number, let b = values[1].number, b != 0 else { return .null }
            return .number(a / b)
        }
        strict("IDIV", 2...2) { values in
            // Both operands truncated to whole numbers; integers stay exact. A quotient beyond
            // Int64 (IDIV(-2^63, -1)) becomes a double, as integer overflow does in N1QL.
            func whole(_ value: Datum) -> Double? {
                if case .int(let number) = value { return Double(number) }
                return value.number.map { $0.rounded(.towardZero) }
            }
            guard let a = whole(values[0]), let b = whole(values[1]), b != 0 else { return .null }
            var dividend = Int64(exactly: a)
            if case .int(let exact) = values[0] { dividend = exact }
            if let x = dividend, let y = Int64(exactly: b) {
                let (quotient, overflow) = x.dividedReportingOverflow(by: y)
                if !overflow { return .int(quotient) }
            }
            let quotient = (a / b).rounded(.towardZero)
            return Int64(exactly: quotient).map(Datum.int) ?? .number(quotient)
        }
    }

    /// A number argument used as a count, position or number of digits: truncated toward zero
    /// and saturated to `Int` (1e300 is `Int.max`), instead of trapping on `Int(1e300)`.
    static func wholeNumber(_ number: Double) -> Int? {
        guard !number.isNaN else { return nil }
        return Int(exactly: number.rounded(.towardZero)) ?? (number < 0 ? .min : .max)
    }

    // MARK: - Strings

    /// CONCAT() and `||`: MISSING if any operand is; every other value joins as text, as in
    /// LiteCore: numbers and booleans as they print, null, arrays and objects as JSON.
    static func concatenate(_ values: [Datum?]) -> Datum? {
        var result = ""
        for value in values {
            guard let value else { return nil }
            switch value {
            case .string(let text): result += text
            case .bool(let flag): result += flag ? "true" : "false"
            default: result += JSON.string(from: value.value, doubles: .couchbaseLite)
            }
        }
        return .string(result)
    }

    private static func addStrings(_ strict: Strict, _ lenient: Lenient) {
        func text(_ name: String, _ operation: @escaping @Sendable (String) -> Datum) {
            strict(name, 1...1) { values in values[0].string.map(operation) ?? .null }
        }
        text("LOWER") { .string($0.lowercased()) }
        text("UPPER") { .string($0.uppercased()) }
        text("LENGTH") { .int(Int64($0.count)) }
        func trim(_ name: String, leading: Bool, trailing: Bool) {
            strict(name, 1...2) { values in
                guard let text = values[0].string else { return .null }
                let characters: Set<Character>
                if values.count > 1 {
                    guard let set = values[1].string else { return .null }
                    characters = Set(set)
                } else {
                    characters = [" ", "\t", "\n", "\r"]
                }
                var slice = Substring(text)
                if leading { slice = slice.drop { characters.contains($0) } }
                if trailing { while let last = slice.last, characters.contains(last) { slice = slice.dropLast() } }
                return .string(String(slice))
            }
        }
        trim("TRIM", leading: true, trailing: true)
        trim("LTRIM", leading: true, trailing: false)
        trim("RTRIM", leading: false, trailing: true)
        strict("CONTAINS", 2...2) { values in
            guard let text = values[0].string, let part = values[1].string else { return .null }
            return .bool(part.isEmpty || text.contains(part))
        }
        lenient("CONCAT", 2...Int.max) { values in concatenate(values) }
    }

    // MARK: - Conditionals

    private static func addConditionals(_ lenient: Lenient) {
        lenient("IFMISSING", 2...Int.max) { values in values.first { $0 != nil } ?? nil }
        lenient("IFNULL", 2...Int.max) { values in
            for value in values where value?.isNull != true { return value }
            return .null
        }
        lenient("IFMISSINGORNULL", 2...Int.max) { values in
            for case let value? in values where !value.isNull { return value }
            return .null
        }
        lenient("MISSINGIF", 2...2) { values in
            guard let a = values[0], let b = values[1] else { return nil }
            if a.isNull || b.isNull { return .null }
            return ValueOrder.compare(a, b) == 0 && a.kind == b.kind ? nil : a
        }
        lenient("NULLIF", 2...2) { values in
            guard let a = values[0], let b = values[1] else { return nil }
            if a.isNull || b.isNull { return .null }
            return ValueOrder.compare(a, b) == 0 && a.kind == b.kind ? .null : a
        }
        lenient("GREATEST", 2...Int.max) { values in extreme(values, greatest: true) }
        lenient("LEAST", 2...Int.max) { values in extreme(values, greatest: false) }
    }

    /// GREATEST/LEAST: MISSING or null if any argument is, else the extreme in N1QL order.
    private static func extreme(_ values: [Datum?], greatest: Bool) -> Datum? {
        var best: Datum?
        for value in values {
            guard let value else { return nil }
            if value.isNull { return .null }
            if let current = best {
                let order = ValueOrder.compare(value, current)
                if greatest ? order > 0 : order < 0 { best = value }
            } else {
                best = value
            }
        }
        return best
    }

    // MARK: - Arrays

    private static func addArrays(_ strict: Strict, _ lenient: Lenient) {
        func array(_ name: String, _ arity: ClosedRange<Int> = 1...1, _ operation: @escaping @Sendable ([Datum], [Datum]) -> Datum?) {
            strict(name, arity) { values in values[0].elements.map { operation($0, Array(values.dropFirst())) } ?? .null }
        }
        array("ARRAY_LENGTH") { elements, _ in .int(Int64(elements.count)) }
        array("ARRAY_COUNT") { elements, _ in .int(Int64(elements.filter { !$0.isNull }.count)) }
        // ARRAY_SUM, _AVG, _MAX and _MIN read every element as a number, as LiteCore does: a
        // boolean as 1 or 0, anything else that is not a number as 0.
        array("ARRAY_SUM") { elements, _ in
            elements.allSatisfy { $0.kind == .number } ? sum(elements) : .number(elements.reduce(0) { $0 + numericValue($1) })
        }
        array("ARRAY_AVG") { elements, _ in
            elements.isEmpty ? .int(0) : .number(elements.reduce(0) { $0 + numericValue($1) } / Double(elements.count))
        }
        array("ARRAY_MAX") { elements, _ in
            elements.map(numericValue).max().map(Datum.number) ?? .null
        }
        array("ARRAY_MIN") { elements, _ in
            elements.map(numericValue).min().map(Datum.number) ?? .null
        }
        array("ARRAY_IFNULL") { elements, _ in elements.first { !$0.isNull } ?? .null }
        array("ARRAY_CONTAINS", 2...2) { elements, rest in
            .bool(elements.contains { ValueOrder.compare($0, rest[0]) == 0 && $0.kind == rest[0].kind })
        }
        array("ARRAY_DISTINCT") { elements, _ in
            var seen: Set<HashKey> = []
            return .array(elements.filter { seen.insert(HashKey($0)).inserted })
        }
        // MISSING arguments are left out, as in an array literal.
        lenient("ARRAY_OF", 0...Int.max) { values in .array(values.compactMap { $0 }) }
    }

    /// A value read as a number the way LiteCore's array functions read one.
    static func numericValue(_ value: Datum) -> Double {
        switch value {
        case .bool(let flag): flag ? 1 : 0
        default: value.number ?? 0
        }
    }

    /// Sum of the numbers among `values`: an integer while every term is one.
    static func sum(_ values: [Datum]) -> Datum {
        var integer: Int64 = 0
        var double = 0.0
        var isInteger = true
        for value in values {
            switch value {
            case .int(let number):
                let (result, overflow) = integer.addingReportingOverflow(number)
                if overflow { isInteger = false }
                integer = result
                double += Double(number)
            case .double, .largeInteger:
                isInteger = false
                double += value.number ?? 0
            default: continue
            }
        }
        return isInteger ? .int(integer) : .number(double)
    }

    // MARK: - Types

    private static func addTypes(_ strict: Strict, _ lenient: Lenient) {
        func test(_ name: String, _ predicate: @escaping @Sendable (Datum) -> Bool) {
            strict(name, 1...1) { values in .bool(predicate(values[0])) }
        }
        test("ISARRAY") { $0.kind == .array }
        test("ISOBJECT") { $0.kind == .object }
        test("ISSTRING") { $0.kind == .string }
        test("ISNUMBER") { $0.kind == .number }
        test("ISBOOLEAN") { $0.kind == .boolean }
        test("ISATOM") { [.boolean, .number, .string].contains($0.kind) }
        // MISSING and null pass through, as LiteCore's type() does.
        strict("TYPE", 1...1) { values in
            switch values[0].kind {
            case .missing, .null: return values[0]
            case .boolean: return .string("boolean")
            case .number: return .string("number")
            case .string: return .string("string")
            case .array: return .string("array")
            case .object: return .string("object")
            }
        }
        strict("TOARRAY", 1...1) { values in values[0].kind == .array ? values[0] : .array([values[0]]) }
        strict("TOATOM", 1...1) { values in
            let value = values[0]
            switch value.kind {
            case .array, .object:
                guard value.containerCount == 1 else { return .null }
                let single = value.elements?.first ?? value.entries?.values.first
                return single.map { [.boolean, .number, .string].contains($0.kind) ? $0 : .null } ?? .null
            default: return value
            }
        }
        strict("TOBOOLEAN", 1...1) { values in
            switch values[0] {
            case .bool: return values[0]
            case .int(let number): return .bool(number != 0)
            case .double(let number): return .bool(number != 0 && !number.isNaN)
            case .largeInteger: return .bool(true)
            case .string(let text): return .bool(!text.isEmpty)
            default: return .bool((values[0].containerCount ?? 0) > 0)
            }
        }
        strict("TONUMBER", 1...1) { values in
            switch values[0] {
            case .int, .double, .largeInteger: return values[0]
            case .bool(let flag): return .int(flag ? 1 : 0)
            case .string(let text):
                let trimmed = text.trimmingCharacters(in: .whitespaces)
                if let integer = Int64(trimmed) { return .int(integer) }
                if let large = LargeInteger(text: trimmed) { return .largeInteger(large) }
                if let double = Double(trimmed), double.isFinite { return .double(double) }
                return .null
            default: return .null
            }
        }
        strict("TOOBJECT", 1...1) { values in values[0].kind == .object ? values[0] : .object([:]) }
        strict("TOSTRING", 1...1) { values in
            switch values[0] {
            case .string: return values[0]
            case .bool(let flag): return .string(flag ? "true" : "false")
            case .int, .double, .largeInteger: return .string(JSON.string(from: values[0].value, doubles: .couchbaseLite))
            default: return .null
            }
        }
    }

    // MARK: - Regular expressions

    /// How long one regular-expression function may work on one value. ICU's matcher
    /// backtracks, so a pattern like `(a+)+b` takes exponential time on a long run of `a`s; ICU
    /// calls back during long matches (`.reportProgress`), and the callback stops the match once
    /// this much time has passed.
    static let regexTimeLimit: Duration = .seconds(1)

    /// The matches of `expression` in `text` (at most `limit`), in order.
    /// - Throws: `.invalidQuery` when matching takes longer than ``regexTimeLimit``.
    static func matches(
        _ expression: NSRegularExpression, in text: String,
        limit: Int = .max, function: String
    ) throws -> [NSTextCheckingResult] {
        var results: [NSTextCheckingResult] = []
        guard limit > 0 else { return results }
        var timedOut = false
        let deadline = ContinuousClock.now + regexTimeLimit
        expression.enumerateMatches(in: text, options: [.reportProgress], range: NSRange(text.startIndex..., in: text)) { result, _, stop in
            if let result {
                results.append(result)
                if results.count >= limit { stop.pointee = true }
            }
            if ContinuousClock.now > deadline {
                timedOut = true
                stop.pointee = true
            }
        }
        if timedOut {
            throw CouchetteError(
                .invalidQuery,
                "\(function)(): the regular expression '\(expression.pattern)' took longer than \(regexTimeLimit) on a \(text.utf16.count)-unit string (too much backtracking)"
            )
        }
        return results
    }

    private static func addRegex(_ strict: Strict) {
        func regex(
            _ name: String, _ arity: ClosedRange<Int>,
            _ operation: @escaping @Sendable (String, NSRegularExpression, [Datum]) throws -> Datum
        ) {
            strict(name, arity) { values in
                guard let text = values[0].string, let pattern = values[1].string else { return .null }
                guard let expression = try? NSRegularExpression(pattern: pattern) else {
                    throw CouchetteError(.invalidQuery, "\(name)(): invalid regular expression '\(pattern)'")
                }
                return try operation(text, expression, Array(values.dropFirst(2)))
            }
        }
        regex("REGEXP_CONTAINS", 2...2) { text, expression, _ in
            .bool(try !matches(expression, in: text, limit: 1, function: "REGEXP_CONTAINS").isEmpty)
        }
        regex("REGEXP_LIKE", 2...2) { text, expression, _ in
            // A whole-string match: the pattern wrapped in \A(?:…)\z. Matching the bare pattern
            // `.anchored` and comparing ranges is wrong for alternations (`a|ab` stops at `a`
            // on "ab" and the match would not cover the string).
            guard let whole = try? NSRegularExpression(pattern: "\\A(?:\(expression.pattern))\\z") else {
                throw CouchetteError(.invalidQuery, "REGEXP_LIKE(): invalid regular expression '\(expression.pattern)'")
            }
            return .bool(try !matches(whole, in: text, limit: 1, function: "REGEXP_LIKE").isEmpty)
        }
        regex("REGEXP_POSITION", 2...2) { text, expression, _ in
            guard let match = try matches(expression, in: text, limit: 1, function: "REGEXP_POSITION").first,
                let range = Range(match.range, in: text)
            else { return .int(-1) }
            return .int(Int64(text.distance(from: text.startIndex, to: range.lowerBound)))
        }
        regex("REGEXP_REPLACE", 3...4) { text, expression, rest in
            guard let replacement = rest[0].string else { return .null }
            // The optional count: how many matches to replace; negative or absent, all of them.
            var limit = rest.count > 1 ? (rest[1].number.flatMap(wholeNumber) ?? -1) : -1
            if limit < 0 { limit = Int.max }
            var result = ""
            var last = text.startIndex
            for match in try matches(expression, in: text, limit: limit, function: "REGEXP_REPLACE") {
                guard let range = Range(match.range, in: text) else { continue }
                result += text[last..<range.lowerBound]
                result += expression.replacementString(for: match, in: text, offset: 0, template: replacement)
                last = range.upperBound
            }
            result += text[last...]
            return .string(result)
        }
    }
}
