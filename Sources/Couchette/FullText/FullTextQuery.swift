/// A parsed full-text search string, in SQLite FTS4's enhanced query syntax as Couchbase Lite
/// accepts it:
///
/// - `word word` (implicit AND), `a AND b`, `a OR b`, `a NOT b` (a without b), parentheses;
/// - `"a phrase"`: the words in a row (a bare `new-york` is the phrase `"new york"`);
/// - `prefix*`: any term starting with the prefix (also inside a phrase);
/// - `a NEAR b`, `a NEAR/3 b`: both, with at most 10 (or 3) words between them, in either
///   order (operands are words or phrases; a chain `a NEAR b NEAR c` needs each neighbour pair near).
///
/// Operators are upper case (`and` is a word); precedence from tightest: NEAR, NOT, AND, OR.
/// Words go through the index's tokenizer (case and accent folding, stop words, stemming); a
/// word that is a stop word drops out (a query of stop words only matches nothing).
indirect enum FullTextQuery: Equatable {
    /// Terms at word offsets from the phrase's start (a single word is a one-element phrase).
    case phrase([Element])
    case near([[Element]], distances: [Int])
    case and(FullTextQuery, FullTextQuery)
    case or(FullTextQuery, FullTextQuery)
    /// Documents matching the first and not the second.
    case not(FullTextQuery, FullTextQuery)
    /// What a query of stop words only becomes: matches nothing, and drops out of AND, OR and NOT.
    case empty

    struct Element: Equatable, Hashable {
        var text: String
        var isPrefix: Bool
        var offset: Int
    }

    static let defaultNearDistance = 10
    /// Deepest nesting of parentheses accepted.
    static let maximumDepth = 64
    /// Longest search string accepted, in bytes.
    static let maximumLength = 10_000

    /// Parses `text` with `tokenizer`'s folding. Throws `.invalidQuery` naming the problem.
    static func parse(_ text: String, tokenizer: FullTextTokenizer) throws -> FullTextQuery {
        guard text.utf8.count <= maximumLength else {
            throw CouchetteError(.invalidQuery, "full-text search string is longer than \(maximumLength) bytes")
        }
        let tokens = try lex(text)
        if tokens.isEmpty { return .empty }  // an empty search box finds nothing (as in SQLite)
        var parser = Parser(tokens: tokens, tokenizer: tokenizer, text: text)
        let query = try parser.parseOr(depth: 0)
        if parser.position < parser.tokens.count {
            throw parser.error("unexpected \(parser.tokens[parser.position].description)")
        }
        return query
    }

    // MARK: - Lexing

    enum Token: Equatable {
        case open, close, and, or, not
        case near(Int)
        case word(String)
        case quoted(String)

        var description: String {
            switch self {
            case .open: "'('"
            case .close: "')'"
            case .and: "AND"
            case .or: "OR"
            case .not: "NOT"
            case .near(let distance): "NEAR/\(distance)"
            case .word(let word): "'\(word)'"
            case .quoted(let phrase): "\"\(phrase)\""
            }
        }

        var startsOperand: Bool {
            switch self {
            case .open, .word, .quoted: true
            default: false
            }
        }
    }

    static func lex(_ text: String) throws -> [Token] {
        var tokens: [Token] = []
        var characters = text.makeIterator()
        var pending: Character? = nil
        func next() -> Character? {
            if let character = pending { pending = nil; return character }
            return characters.next()
        }
        while let character = next() {
            if character.isWhitespace { continue }
            if character == "(" { tokens.append(.open); continue }
            if character == ")" { tokens.append(.close); continue }
            if character == "\"" {
                var phrase = ""
                var closed = false
                while let inner = next() {
                    if inner == "\"" { closed = true; break }
                    phrase.append(inner)
                }
                guard closed else {
                    throw CouchetteError(.invalidQuery, "malformed full-text search string '\(text)': unterminated \"phrase\"")
                }
                // A `*` right after the closing quote makes the phrase's last word a prefix.
                if let after = next() {
                    if after == "*" { phrase.append("*") } else { pending = after }
                }
                tokens.append(.quoted(phrase))
                continue
            }
            var word = String(character)
            while let inner = next() {
                if inner.isWhitespace || inner == "(" || inner == ")" || inner == "\"" { pending = inner; break }
                word.append(inner)
            }
            switch word {
            case "AND": tokens.append(.and)
            case "OR": tokens.append(.or)
            case "NOT": tokens.append(.not)
            case "NEAR": tokens.append(.near(defaultNearDistance))
            default:
                if word.hasPrefix("NEAR/"), let distance = Int(word.dropFirst(5)), distance >= 0 {
                    tokens.append(.near(min(distance, PostingList.maximumOffset)))
                } else {
                    tokens.append(.word(word))
                }
            }
        }
        return tokens
    }

    // MARK: - Parsing

    private struct Parser {
        let tokens: [Token]
        let tokenizer: FullTextTokenizer
        let text: String
        var position = 0

        init(tokens: [Token], tokenizer: FullTextTokenizer, text: String) {
            self.tokens = tokens
            self.tokenizer = tokenizer
            self.text = text
        }

        func error(_ reason: String) -> CouchetteError {
            CouchetteError(.invalidQuery, "malformed full-text search string '\(text)': \(reason)")
        }

        var current: Token? { position < tokens.count ? tokens[position] : nil }

        mutating func parseOr(depth: Int) throws -> FullTextQuery {
            var left = try parseAnd(depth: depth)
            while current == .or {
                position += 1
                left = combine(left, try parseAnd(depth: depth)) { .or($0, $1) }
            }
            return left
        }

        mutating func parseAnd(depth: Int) throws -> FullTextQuery {
            var left = try parseNot(depth: depth)
            while let token = current, token == .and || token.startsOperand {
                if token == .and { position += 1 }
                left = combine(left, try parseNot(depth: depth)) { .and($0, $1) }
            }
            return left
        }

        mutating func parseNot(depth: Int) throws -> FullTextQuery {
            var left = try parseNear(depth: depth)
            while current == .not {
                position += 1
                let right = try parseNear(depth: depth)
                if left == .empty { continue }
                if right != .empty { left = .not(left, right) }
            }
            return left
        }

        mutating func parseNear(depth: Int) throws -> FullTextQuery {
            let firstIsGroup = current == .open
            let first = try parsePrimary(depth: depth)
            guard case .near = current else { return first }
            guard !firstIsGroup, let firstPhrase = first.phrase else { throw error("NEAR needs a word or phrase on each side") }
            var phrases = [firstPhrase]
            var distances: [Int] = []
            while case .near(let distance) = current {
                position += 1
                guard current != .open, let phrase = try parsePrimary(depth: depth).phrase else {
                    throw error("NEAR needs a word or phrase on each side")
                }
                phrases.append(phrase)
                distances.append(distance)
            }
            // Stop words drop out of the chain; their neighbours' limits add up (conservatively, the larger).
            var keptPhrases: [[Element]] = []
            var keptDistances: [Int] = []
            for (index, phrase) in phrases.enumerated() where !phrase.isEmpty {
                if !keptPhrases.isEmpty { keptDistances.append(distances[index - 1]) }
                keptPhrases.append(phrase)
            }
            if keptPhrases.isEmpty { return .empty }
            if keptPhrases.count == 1 { return .phrase(keptPhrases[0]) }
            return .near(keptPhrases, distances: keptDistances)
        }

        mutating func parsePrimary(depth: Int) throws -> FullTextQuery {
            guard let token = current else { throw error("the search string ends where a word was expected") }
            position += 1
            switch token {
            case .open:
                guard depth < FullTextQuery.maximumDepth else {
                    throw error("parentheses nested deeper than \(FullTextQuery.maximumDepth)")
                }
                let inner = try parseOr(depth: depth + 1)
                guard current == .close else { throw error("missing ')'") }
                position += 1
                return inner
            case .word(let word):
                return phrase(word)
            case .quoted(let text):
                return phrase(text)
            default:
                throw error("\(token.description) where a word was expected")
            }
        }

        /// The elements of a word run or a quoted phrase; a `*` ending a chunk makes its last word a prefix.
        func phrase(_ text: String) -> FullTextQuery {
            var elements: [Element] = []
            var offset = 0
            for chunk in text.split(whereSeparator: { $0.isWhitespace }) {
                let isPrefix = chunk.hasSuffix("*")
                let body = isPrefix ? String(chunk.dropLast()) : String(chunk)
                var words: [String] = []
                FullTextTokenizer.forEachWord(in: body) { words.append(String(String.UnicodeScalarView($0))) }
                for (index, word) in words.enumerated() {
                    if isPrefix && index == words.count - 1 {
                        let folded = tokenizer.foldedPrefix(word)
                        if !folded.isEmpty { elements.append(Element(text: folded, isPrefix: true, offset: offset)) }
                    } else if let term = tokenizer.term(forWord: word) {
                        elements.append(Element(text: term, isPrefix: false, offset: offset))
                    }
                    offset += 1
                }
            }
            guard let base = elements.first?.offset else { return .empty }
            return .phrase(elements.map { Element(text: $0.text, isPrefix: $0.isPrefix, offset: $0.offset - base) })
        }

        func combine(
            _ left: FullTextQuery, _ right: FullTextQuery,
            _ make: (FullTextQuery, FullTextQuery) -> FullTextQuery
        ) -> FullTextQuery {
            if left == .empty { return right }
            if right == .empty { return left }
            return make(left, right)
        }
    }

    var phrase: [Element]? {
        switch self {
        case .phrase(let elements): elements
        case .empty: []
        default: nil
        }
    }
}
