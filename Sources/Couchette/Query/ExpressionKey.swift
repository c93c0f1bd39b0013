/// A canonical text for an expression, so that the planner can tell that a query's `p.name` and
/// an index's `name` are the same thing.
///
/// Paths rooted at the document are written `.name.sub[0]` (the FROM alias stripped); paths
/// rooted at an array member (an `ANY` variable, an `UNNEST` alias, or an array index's element)
/// are written the same way but carry the array's own key as their ``Context``. Anything whose
/// meaning depends on the query around it (parameters, other sources, result aliases) has no key.
struct ExpressionKey: Hashable, Sendable {
    enum Context: Hashable, Sendable {
        case document
        /// Members of the array (or dictionary values) at this document path key.
        case member(String)
    }

    var context: Context
    var text: String

    /// What a path's root identifier refers to.
    enum Root {
        /// A property of the main document named by the identifier.
        case property
        /// The main document itself (its alias): stripped.
        case document
        /// An array member of the array at this path key: stripped.
        case member(String)
        /// Something no index can hold.
        case opaque
    }

    /// Renders `expression`; nil when it has no key or mixes contexts.
    static func make(_ expression: Expression, resolve: @escaping (String) -> Root) -> ExpressionKey? {
        var renderer = Renderer(resolve: resolve)
        guard let text = renderer.render(expression), renderer.contexts.count <= 1 else { return nil }
        return ExpressionKey(context: renderer.contexts.first ?? .document, text: text)
    }

    private struct Renderer {
        let resolve: (String) -> Root
        var contexts: Set<Context> = []
        var bound: [String] = []

        mutating func render(_ expression: Expression) -> String? {
            switch expression {
            case .literal(let value): return "L" + JSON.string(from: value)
            case .missing: return "MISSING"
            case .parameter, .allProperties: return nil
            case .identifier, .member, .subscripted: return renderPath(expression)
            case .meta(let alias):
                if let alias, case .document = resolve(alias) {} else if alias != nil { return nil }
                contexts.insert(.document)
                return "META()"
            case .array(let elements): return list(elements).map { "[" + $0 + "]" }
            case .object(let entries):
                var parts: [String] = []
                for (key, value) in entries {
                    guard let rendered = render(value) else { return nil }
                    parts.append(JSON.string(from: .string(key)) + ":" + rendered)
                }
                return "{" + parts.joined(separator: ",") + "}"
            case .unary(let op, let operand): return render(operand).map { "(\(op.rawValue) \($0))" }
            case .binary(let op, let lhs, let rhs):
                guard let a = render(lhs), let b = render(rhs) else { return nil }
                return "(\(a) \(op.rawValue) \(b))"
            case .isTest(let operand, let test, let negated):
                return render(operand).map { "(\($0) IS \(negated ? "NOT " : "")\(test.rawValue))" }
            case .identical(let lhs, let rhs, let negated):
                guard let a = render(lhs), let b = render(rhs) else { return nil }
                return "(\(a) IS \(negated ? "NOT " : "")\(b))"
            case .like(let subject, let pattern, let negated):
                guard let a = render(subject), let b = render(pattern) else { return nil }
                return "(\(a) \(negated ? "NOT " : "")LIKE \(b))"
            case .inArray(let needle, let haystack, let negated):
                guard let a = render(needle), let b = render(haystack) else { return nil }
                return "(\(a) \(negated ? "NOT " : "")IN \(b))"
            case .between(let subject, let low, let high, let negated):
                guard let a = render(subject), let b = render(low), let c = render(high) else { return nil }
                return "(\(a) \(negated ? "NOT " : "")BETWEEN \(b) AND \(c))"
            case .caseWhen(let subject, let whens, let otherwise):
                var text = "(CASE"
                if let subject { guard let rendered = render(subject) else { return nil }; text += " " + rendered }
                for (condition, result) in whens {
                    guard let a = render(condition), let b = render(result) else { return nil }
                    text += " WHEN \(a) THEN \(b)"
                }
                if let otherwise { guard let rendered = render(otherwise) else { return nil }; text += " ELSE " + rendered }
                return text + " END)"
            case .quantified(let quantifier, let variable, let source, let condition):
                guard let collection = render(source) else { return nil }
                bound.append(variable)
                defer { bound.removeLast() }
                guard let test = render(condition) else { return nil }
                return "(\(quantifier.rawValue) ?\(bound.count) IN \(collection) SATISFIES \(test))"
            case .exists(let operand): return render(operand).map { "(EXISTS \($0))" }
            case .function(let name, let arguments, let distinct, let star, _):
                if star { return "\(name)(*)" }
                return list(arguments).map { "\(name)(\(distinct ? "DISTINCT " : "")\($0))" }
            case .collate(let inner, let collation): return render(inner).map { "(\($0) COLLATE \(collation))" }
            }
        }

        private mutating func list(_ items: [Expression]) -> String? {
            var parts: [String] = []
            for item in items {
                guard let rendered = render(item) else { return nil }
                parts.append(rendered)
            }
            return parts.joined(separator: ",")
        }

        private mutating func renderPath(_ expression: Expression) -> String? {
            var steps: [String] = []
            var current = expression
            while true {
                switch current {
                case .member(let base, let key):
                    steps.append("." + JSON.string(from: .string(key)))
                    current = base
                    continue
                case .subscripted(let base, let index):
                    if case .literal(.string(let key)) = index {
                        steps.append("." + JSON.string(from: .string(key)))
                    } else {
                        guard let rendered = render(index) else { return nil }
                        steps.append("[" + rendered + "]")
                    }
                    current = base
                    continue
                default: break
                }
                break
            }
            let tail = steps.reversed().joined()
            switch current {
            case .identifier(let name):
                if let slot = bound.lastIndex(of: name) { return "?\(slot + 1)" + tail }
                switch resolve(name) {
                case .property:
                    contexts.insert(.document)
                    return "." + JSON.string(from: .string(name)) + tail
                case .document:
                    guard !tail.isEmpty else { return nil }
                    contexts.insert(.document)
                    return tail
                case .member(let path):
                    contexts.insert(.member(path))
                    return tail
                case .opaque:
                    return nil
                }
            case .meta:
                guard let base = render(current) else { return nil }
                return base + tail.lowercased()
            default:
                return render(current).map { "(" + $0 + ")" + tail }
            }
        }
    }
}
