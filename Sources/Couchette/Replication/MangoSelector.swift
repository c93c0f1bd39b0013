import Foundation

/// A CouchDB Mango selector, parsed once and matched against many documents: what
/// `_changes?filter=_selector` filters with, on the listener and in ``CollectionConfiguration/pullSelector``.
///
/// ```swift
/// let selector = try MangoSelector(JSON.parse(#"{"type": "task", "owner.name": {"$in": ["ann", "bob"]}}"#))
/// selector.matches(JSON.parse(#"{"_id": "t1", "type": "task", "owner": {"name": "ann"}}"#))  // true
/// ```
///
/// It follows CouchDB 3's rules (`mango_selector`): several fields of one object must all match
/// (implicit `$and`); a plain value means `$eq`; an object without operators is a nested field
/// (`{"a": {"b": 1}}` is `{"a.b": 1}`); field names are dot paths (`\.` for a literal dot; a
/// number segment indexes an array); comparisons use CouchDB's collation (``CouchCollation``:
/// `{"$gt": 5}` holds for every string); a missing field matches only `{"$exists": false}` and
/// the negations around it (`$ne` on a missing field does not match); an array field is compared
/// as a whole, except by `$in`/`$nin` (which look at its elements), `$all`, `$size`,
/// `$elemMatch` and `$allMatch`. A deleted document is matched as `{"_id", "_rev", "_deleted": true}`.
/// Nesting is limited to ``maximumDepth`` levels.
struct MangoSelector: Sendable {
    static let maximumDepth = 64

    /// The selector as it was given (what a client sends on to a server).
    let source: Value
    private let root: Node

    /// Parses a selector; throws `.invalidParameter` ("Selector error: …") naming the problem.
    init(_ selector: Value) throws {
        guard case .dictionary = selector else { throw Self.error("expected a JSON object") }
        source = selector
        root = try Self.selector(selector, depth: 0)
    }

    /// Whether `document` (a body with its `_id`, `_rev`, and `_deleted` when deleted) matches.
    func matches(_ document: Value) -> Bool {
        root.matches(document)
    }

    // MARK: - Tree

    private indirect enum Node: Sendable {
        case all([Node])
        case any([Node])
        case none([Node])
        case not(Node)
        /// Applies the node to the value at a path below the current one.
        case field([String], Node)
        /// Tests the current value (nil when it is missing).
        case test(Condition)

        func matches(_ value: Value?) -> Bool {
            switch self {
            case .all(let nodes): nodes.allSatisfy { $0.matches(value) }
            case .any(let nodes): nodes.isEmpty || nodes.contains { $0.matches(value) }
            case .none(let nodes): !nodes.contains { $0.matches(value) }
            case .not(let node): !node.matches(value)
            case .field(let path, let node): node.matches(value.flatMap { MangoSelector.resolve(path, in: $0) })
            case .test(let condition): condition.matches(value)
            }
        }
    }

    private enum Condition: Sendable {
        case compare(Comparison, Value)
        case within([Value])
        case notWithin([Value])
        case exists(Bool)
        case type(String)
        case containsAll([Value])
        case size(Int)
        case modulo(divisor: Int64, remainder: Int64)
        case regex(Pattern)
        case elementMatch(Node)
        case allElementsMatch(Node)

        enum Comparison: Sendable { case eq, ne, lt, lte, gt, gte }

        func matches(_ value: Value?) -> Bool {
            guard let value else {
                if case .exists(let flag) = self { return !flag }
                return false
            }
            switch self {
            case .compare(let comparison, let argument):
                let order = CouchCollation.compare(value, argument)
                switch comparison {
                case .eq: return order == 0
                case .ne: return order != 0
                case .lt: return order < 0
                case .lte: return order <= 0
                case .gt: return order > 0
                case .gte: return order >= 0
                }
            case .within(let arguments):
                let candidates = if case .array(let elements) = value { elements } else { [value] }
                return arguments.contains { argument in candidates.contains { CouchCollation.compare($0, argument) == 0 } }
            case .notWithin(let arguments):
                return !Condition.within(arguments).matches(value)
            case .exists(let flag):
                return flag
            case .type(let name):
                return MangoSelector.typeName(of: value) == name
            case .containsAll(let arguments):
                guard case .array(let elements) = value, !arguments.isEmpty else { return false }
                if elements == arguments { return true }
                return arguments.allSatisfy { argument in elements.contains { CouchCollation.compare($0, argument) == 0 } }
            case .size(let count):
                guard case .array(let elements) = value else { return false }
                return elements.count == count
            case .modulo(let divisor, let remainder):
                guard case .int(let number) = value else { return false }
                let (result, overflow) = number.remainderReportingOverflow(dividingBy: divisor)
                return (overflow ? 0 : result) == remainder
            case .regex(let pattern):
                guard case .string(let text) = value else { return false }
                return pattern.matches(text)
            case .elementMatch(let node):
                guard case .array(let elements) = value else { return false }
                return elements.contains { node.matches($0) }
            case .allElementsMatch(let node):
                guard case .array(let elements) = value, !elements.isEmpty else { return false }
                return elements.allSatisfy { node.matches($0) }
            }
        }
    }

    /// A compiled `$regex` (ICU syntax, close to CouchDB's PCRE), matched anywhere in the string.
    private struct Pattern: @unchecked Sendable {
        // @unchecked: NSRegularExpression is immutable after creation and documented as safe to
        // use from several threads at once; nothing here mutates it.
        let expression: NSRegularExpression

        func matches(_ text: String) -> Bool {
            expression.firstMatch(in: text, range: NSRange(text.startIndex..., in: text)) != nil
        }
    }

    // MARK: - Parsing

    private static func error(_ problem: String) -> CouchetteError {
        CouchetteError(.invalidParameter, "Selector error: \(problem)")
    }

    private static func checkDepth(_ depth: Int) throws {
        guard depth < maximumDepth else { throw error("nested deeper than \(maximumDepth) levels") }
    }

    /// An object of fields, combination operators and (inside `$elemMatch`/`$allMatch`)
    /// conditions on the current value; its entries must all match.
    private static func selector(_ value: Value, depth: Int) throws -> Node {
        try checkDepth(depth)
        guard case .dictionary(let entries) = value else {
            throw error("expected a JSON object, got \(JSON.string(from: value).prefix(80))")
        }
        var nodes: [Node] = []
        for key in ValueEncoder.sortedKeys(entries.keys) {
            let argument = entries[key]!
            switch key {
            case "$and", "$or", "$nor":
                let parts = try array(argument, for: key).map { try selector($0, depth: depth + 1) }
                nodes.append(combination(key, parts))
            case "$not":
                nodes.append(.not(try selector(argument, depth: depth + 1)))
            case _ where key.hasPrefix("$"):
                nodes.append(try condition(key, argument, depth: depth + 1))
            default:
                nodes.append(.field(try path(key), try fieldValue(argument, depth: depth + 1)))
            }
        }
        return nodes.count == 1 ? nodes[0] : .all(nodes)
    }

    /// What follows a field name: a value (`$eq`), an object of operators, or an object of
    /// subfields.
    private static func fieldValue(_ value: Value, depth: Int) throws -> Node {
        try checkDepth(depth)
        guard case .dictionary(let entries) = value, !entries.isEmpty else { return .test(.compare(.eq, value)) }
        let operators = entries.keys.filter { $0.hasPrefix("$") }
        if operators.isEmpty { return try selector(value, depth: depth) }
        guard operators.count == entries.count else {
            throw error("operators and field names mixed in one object: \(ValueEncoder.sortedKeys(entries.keys).joined(separator: ", "))")
        }
        let nodes = try ValueEncoder.sortedKeys(entries.keys).map { try condition($0, entries[$0]!, depth: depth + 1) }
        return nodes.count == 1 ? nodes[0] : .all(nodes)
    }

    private static func combination(_ name: String, _ parts: [Node]) -> Node {
        switch name {
        case "$and": .all(parts)
        case "$or": .any(parts)
        default: .none(parts)
        }
    }

    private static func condition(_ name: String, _ argument: Value, depth: Int) throws -> Node {
        try checkDepth(depth)
        switch name {
        case "$eq": return .test(.compare(.eq, argument))
        case "$ne": return .test(.compare(.ne, argument))
        case "$lt": return .test(.compare(.lt, argument))
        case "$lte": return .test(.compare(.lte, argument))
        case "$gt": return .test(.compare(.gt, argument))
        case "$gte": return .test(.compare(.gte, argument))
        case "$in": return .test(.within(try array(argument, for: name)))
        case "$nin": return .test(.notWithin(try array(argument, for: name)))
        case "$all": return .test(.containsAll(try array(argument, for: name)))
        case "$exists":
            guard case .bool(let flag) = argument else { throw error("$exists needs true or false") }
            return .test(.exists(flag))
        case "$type":
            guard case .string(let type) = argument, ["null", "boolean", "number", "string", "array", "object"].contains(type) else {
                throw error("$type needs one of null, boolean, number, string, array, object")
            }
            return .test(.type(type))
        case "$size":
            guard case .int(let count) = argument, count >= 0, let size = Int(exactly: count) else {
                throw error("$size needs a non-negative integer")
            }
            return .test(.size(size))
        case "$mod":
            guard case .array(let pair) = argument, pair.count == 2, case .int(let divisor) = pair[0], case .int(let remainder) = pair[1],
                divisor != 0
            else {
                throw error("$mod needs [divisor, remainder]: two integers, the divisor not 0")
            }
            return .test(.modulo(divisor: divisor, remainder: remainder))
        case "$regex":
            guard case .string(let pattern) = argument else { throw error("$regex needs a string") }
            do {
                return .test(.regex(Pattern(expression: try NSRegularExpression(pattern: pattern))))
            } catch {
                throw Self.error("$regex '\(pattern)' is not a valid regular expression")
            }
        case "$elemMatch": return .test(.elementMatch(try selector(argument, depth: depth + 1)))
        case "$allMatch": return .test(.allElementsMatch(try selector(argument, depth: depth + 1)))
        case "$and", "$or", "$nor":
            return combination(name, try array(argument, for: name).map { try fieldValue($0, depth: depth + 1) })
        case "$not":
            return .not(try fieldValue(argument, depth: depth + 1))
        default:
            throw error("invalid operator \(name)")
        }
    }

    private static func array(_ value: Value, for name: String) throws -> [Value] {
        guard case .array(let elements) = value else { throw error("\(name) needs an array") }
        return elements
    }

    /// `a.b\.c.0` → `["a", "b.c", "0"]`.
    private static func path(_ field: String) throws -> [String] {
        var segments: [String] = []
        var current = ""
        var escaped = false
        for character in field {
            if escaped {
                current.append(character)
                escaped = false
            } else if character == "\\" {
                escaped = true
            } else if character == "." {
                segments.append(current)
                current = ""
            } else {
                current.append(character)
            }
        }
        segments.append(current)
        guard !segments.contains(where: \.isEmpty) else { throw error("field name '\(field)' has an empty part") }
        return segments
    }

    // MARK: - Documents

    private static func resolve(_ path: [String], in value: Value) -> Value? {
        var current = value
        for segment in path {
            switch current {
            case .dictionary(let entries):
                guard let next = entries[segment] else { return nil }
                current = next
            case .array(let elements):
                guard let index = Int(segment), elements.indices.contains(index) else { return nil }
                current = elements[index]
            default:
                return nil
            }
        }
        return current
    }

    static func typeName(of value: Value) -> String {
        switch value {
        case .null: "null"
        case .bool: "boolean"
        case .int, .double, .largeInteger: "number"
        case .string: "string"
        case .array: "array"
        case .dictionary: "object"
        }
    }

    /// The document as CouchDB matches it: the body with `_id` and `_rev`, or for a deletion
    /// only `_id`, `_rev` and `"_deleted": true`.
    static func document(id: String, revisionID: String?, deleted: Bool, body: Value?) -> Value {
        var entries: [String: Value] = [:]
        if !deleted, case .dictionary(let properties)? = body { entries = properties }
        entries["_id"] = .string(id)
        if let revisionID { entries["_rev"] = .string(revisionID) }
        if deleted { entries["_deleted"] = .bool(true) }
        return .dictionary(entries)
    }
}
