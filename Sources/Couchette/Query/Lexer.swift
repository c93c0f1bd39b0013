/// One token of SQL++ text, with the character offset where it starts (for error messages).
struct Token: Sendable, Equatable {
    enum Kind: Sendable, Equatable {
        /// A bare word: a keyword or an identifier (keywords are recognised by the parser).
        case word(String)
        /// A `backquoted` identifier: never a keyword.
        case quoted(String)
        case string(String)
        case integer(Int64)
        /// An integer literal beyond `Int64`, kept exact (documents may hold such integers).
        case largeInteger(LargeInteger)
        case double(Double)
        /// `$name` or `$1`.
        case parameter(String)
        /// An operator or punctuation: `( ) [ ] { } , . : ; * + - / % || = == != <> < <= > >=`.
        case symbol(String)
        case end
    }

    let kind: Kind
    let offset: Int

    var describe: String {
        switch kind {
        case .word(let word): "'\(word)'"
        case .quoted(let name): "`\(name)`"
        case .string(let text): "string '\(text)'"
        case .integer(let number): "number \(number)"
        case .largeInteger(let number): "number \(number)"
        case .double(let number): "number \(number)"
        case .parameter(let name): "parameter $\(name)"
        case .symbol(let symbol): "'\(symbol)'"
        case .end: "end of query"
        }
    }
}

/// Splits SQL++ text into tokens.
///
/// Strings take single or double quotes; as in LiteCore, a doubled quote is the only escape
/// (backslashes are kept, so `LIKE '100\%'` escapes the `%`). Identifiers may be backquoted (a
/// doubled backquote escapes); `--` and `/* */` comments are skipped.
struct Lexer {
    private let scalars: [Unicode.Scalar]
    private var position = 0

    init(_ text: String) { scalars = Array(text.unicodeScalars) }

    static func tokenize(_ text: String) throws -> [Token] {
        var lexer = Lexer(text)
        var tokens: [Token] = []
        while true {
            let token = try lexer.next()
            tokens.append(token)
            if token.kind == .end { return tokens }
        }
    }

    private func peek(_ ahead: Int = 0) -> Unicode.Scalar? {
        position + ahead < scalars.count ? scalars[position + ahead] : nil
    }

    private func error(_ message: String, at offset: Int) -> CouchetteError {
        CouchetteError(.invalidQuery, "\(message) at offset \(offset)")
    }

    private static func isIdentifierStart(_ scalar: Unicode.Scalar) -> Bool {
        scalar == "_" || scalar.properties.isAlphabetic
    }

    /// `$` may appear inside an identifier (`Ty$pe`, `Type$`), as in LiteCore's grammar; at the
    /// start it introduces a `$parameter`.
    private static func isIdentifierPart(_ scalar: Unicode.Scalar) -> Bool {
        isIdentifierStart(scalar) || ("0"..."9").contains(scalar) || scalar == "$"
    }

    private mutating func skipSpaceAndComments() throws {
        while let scalar = peek() {
            if scalar.properties.isWhitespace {
                position += 1
            } else if scalar == "-" && peek(1) == "-" {
                while let next = peek(), next != "\n" { position += 1 }
            } else if scalar == "/" && peek(1) == "*" {
                let start = position
                position += 2
                while !(peek() == "*" && peek(1) == "/") {
                    guard peek() != nil else { throw error("unterminated comment", at: start) }
                    position += 1
                }
                position += 2
            } else {
                return
            }
        }
    }

    mutating func next() throws -> Token {
        try skipSpaceAndComments()
        let start = position
        guard let scalar = peek() else { return Token(kind: .end, offset: start) }
        if Lexer.isIdentifierStart(scalar) {
            var word = ""
            while let next = peek(), Lexer.isIdentifierPart(next) {
                word.unicodeScalars.append(next)
                position += 1
            }
            return Token(kind: .word(word), offset: start)
        }
        if ("0"..."9").contains(scalar) || (scalar == "." && peek(1).map { ("0"..."9").contains($0) } == true) {
            return try number(start: start)
        }
        switch scalar {
        case "'", "\"":
            return Token(kind: .string(try quoted(by: scalar, start: start)), offset: start)
        case "`":
            return Token(kind: .quoted(try quoted(by: "`", start: start)), offset: start)
        case "$":
            position += 1
            var name = ""
            // Parameter names are letters, digits and underscores only (as in LiteCore).
            while let next = peek(), Lexer.isIdentifierStart(next) || ("0"..."9").contains(next) {
                name.unicodeScalars.append(next)
                position += 1
            }
            guard !name.isEmpty else { throw error("expected a parameter name after '$'", at: start) }
            return Token(kind: .parameter(name), offset: start)
        default:
            break
        }
        let two = peek(1).map { String(scalar) + String($0) }
        if let two, ["||", "==", "!=", "<>", "<=", ">="].contains(two) {
            position += 2
            return Token(kind: .symbol(two), offset: start)
        }
        if "()[]{},.:;*+-/%=<>".unicodeScalars.contains(scalar) {
            position += 1
            return Token(kind: .symbol(String(scalar)), offset: start)
        }
        throw error("unexpected character '\(scalar)'", at: start)
    }

    private mutating func quoted(by quote: Unicode.Scalar, start: Int) throws -> String {
        position += 1
        var text = ""
        while true {
            guard let scalar = peek() else {
                throw error(quote == "`" ? "unterminated `identifier`" : "unterminated string", at: start)
            }
            position += 1
            if scalar == quote {
                if peek() == quote {
                    text.unicodeScalars.append(quote)
                    position += 1
                    continue
                }
                return text
            }
            text.unicodeScalars.append(scalar)
        }
    }

    private mutating func number(start: Int) throws -> Token {
        var text = ""
        var isDouble = false
        func digits() {
            while let next = peek(), ("0"..."9").contains(next) {
                text.unicodeScalars.append(next)
                position += 1
            }
        }
        digits()
        if peek() == ".", peek(1).map({ ("0"..."9").contains($0) }) == true || text.isEmpty {
            isDouble = true
            text += "."
            position += 1
            digits()
        }
        if let e = peek(), e == "e" || e == "E" {
            let sign = peek(1)
            let hasSign = sign == "+" || sign == "-"
            if let digit = peek(hasSign ? 2 : 1), ("0"..."9").contains(digit) {
                isDouble = true
                text += "e"
                position += 1
                if hasSign, let sign {
                    text.unicodeScalars.append(sign)
                    position += 1
                }
                digits()
            }
        }
        if let next = peek(), Lexer.isIdentifierStart(next) {
            throw error("invalid number '\(text)\(next)'", at: start)
        }
        if !isDouble, let integer = Int64(text) { return Token(kind: .integer(integer), offset: start) }
        if !isDouble, let large = LargeInteger(text: text) { return Token(kind: .largeInteger(large), offset: start) }
        guard let double = Double(text) else { throw error("invalid number '\(text)'", at: start) }
        return Token(kind: .double(double), offset: start)
    }
}
