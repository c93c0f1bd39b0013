import Foundation

/// Turns text into the terms of a full-text index, and search words into the terms to look up.
///
/// Words are found at Unicode word boundaries (UAX #29's main rules, on Unicode scalars): runs of
/// letters, digits, combining marks and connector punctuation; an apostrophe, `’`, `·` or `.`
/// between two letters and `.`, `,` or `;` between two digits stay inside the word (`don't`,
/// `e.g`, `3.14`); every ideograph is a word of its own. Each word is then case-folded
/// (lowercased), dropped if it is a stop word, stemmed with the language's Snowball stemmer and,
/// with `ignoreAccents`, stripped of diacritics. A word's offset counts every word before it in
/// the text, stop words included, so phrases keep their gaps.
///
/// One tokenizer owns a stemmer, which keeps state: use it on one thread at a time.
final class FullTextTokenizer {
    let ignoreAccents: Bool
    private let stemmer: SnowballStemmer?
    private let stopWords: Set<String>
    /// Reused for each word's bytes (a tokenizer lives on one thread).
    private var scratch: [UInt8] = []
    /// Longer terms are cut to this many bytes (on a scalar boundary), in documents and searches
    /// alike, so a term always fits in an LMDB key.
    static let maximumTermLength = 200

    /// `algorithm`: a name ``SnowballStemmer/algorithm(forLanguage:)`` returned, or nil.
    init(ignoreAccents: Bool, algorithm: String?) throws {
        self.ignoreAccents = ignoreAccents
        if let algorithm {
            guard let stemmer = SnowballStemmer(algorithm: algorithm) else {
                throw CouchetteError(.invalidParameter, "full-text language '\(algorithm)' has no Snowball stemmer")
            }
            self.stemmer = stemmer
        } else {
            stemmer = nil
        }
        stopWords = StopWords.words(for: algorithm)
    }

    /// Calls `body` with each term of `text` and its word offset (from `start`); returns the
    /// offset after the last word.
    @discardableResult
    func forEachTerm(in text: String, from start: Int = 0, _ body: (String, Int) throws -> Void) rethrows -> Int {
        var offset = start
        var text = text
        text.makeContiguousUTF8()
        // ASCII text (most text an index sees) is cut and folded on its bytes; the rules are the
        // same as ``forEachWord(in:_:)``'s for ASCII.
        let done = try text.utf8.withContiguousStorageIfAvailable { bytes -> Bool in
            guard !bytes.contains(where: { $0 >= 0x80 }) else { return false }
            try forEachASCIIWord(bytes) { word in
                if let term = asciiTerm(word) { try body(term, offset) }
                offset += 1
            }
            return true
        }
        if done == true { return offset }
        try Self.forEachWord(in: text) { word in
            if let term = term(of: word) { try body(term, offset) }
            offset += 1
        }
        return offset
    }

    private func forEachASCIIWord(_ bytes: UnsafeBufferPointer<UInt8>, _ body: (UnsafeBufferPointer<UInt8>) throws -> Void) rethrows {
        func kind(_ byte: UInt8) -> Kind {
            switch byte {
            case 0x30...0x39: return .digit
            case 0x41...0x5A, 0x61...0x7A, 0x5F: return .letter
            case 0x27, 0x2E: return .midBoth
            case 0x2C, 0x3B: return .midNumber
            default: return .other
            }
        }
        var start = -1
        var last = Kind.other
        var index = 0
        while index < bytes.count {
            let current = kind(bytes[index])
            switch current {
            case .letter, .digit:
                if start < 0 { start = index }
                last = current
            case .midBoth, .midNumber:
                if start >= 0 {
                    if index + 1 < bytes.count {
                        let following = kind(bytes[index + 1])
                        if (current == .midBoth && last == .letter && following == .letter) || (last == .digit && following == .digit) {
                            index += 1
                            continue
                        }
                    }
                    try body(UnsafeBufferPointer(rebasing: bytes[start..<index]))
                    start = -1
                }
            default:
                if start >= 0 {
                    try body(UnsafeBufferPointer(rebasing: bytes[start..<index]))
                    start = -1
                }
            }
            index += 1
        }
        if start >= 0 { try body(UnsafeBufferPointer(rebasing: bytes[start..<bytes.count])) }
    }

    /// The term of an ASCII word as ``fold(_:stem:)`` makes it: lowercased, nil for a stop word, stemmed, cut.
    private func asciiTerm(_ word: UnsafeBufferPointer<UInt8>) -> String? {
        scratch.removeAll(keepingCapacity: true)
        for byte in word { scratch.append(byte >= 0x41 && byte <= 0x5A ? byte + 0x20 : byte) }
        var text = String(decoding: scratch, as: UTF8.self)
        if !stopWords.isEmpty && stopWords.contains(text) { return nil }
        if let stemmer { text = String(decoding: stemmer.stem(scratch), as: UTF8.self) }
        text = Self.cut(text)
        return text.isEmpty ? nil : text
    }

    /// The term a search word stands for; nil for a stop word.
    func term(forWord word: String) -> String? {
        var result: String?
        var seen = false
        Self.forEachWord(in: word) { part in
            guard !seen else { return }
            seen = true
            result = term(of: part)
        }
        return result
    }

    /// The terms of a search string's word run (`"new-york"` is two words): each non-stop word's
    /// term with its offset from the first word.
    func terms(ofSearchText text: String) -> [(term: String, offset: Int)] {
        var result: [(String, Int)] = []
        forEachTerm(in: text) { term, offset in result.append((term, offset)) }
        return result
    }

    /// A prefix search word folded like a term but not stemmed (a stem of a prefix means nothing).
    func foldedPrefix(_ word: String) -> String {
        var result = ""
        Self.forEachWord(in: word) { part in
            if result.isEmpty { result = fold(part, stem: false) }
        }
        return result
    }

    private func term(of word: Substring.UnicodeScalarView) -> String? {
        let folded = fold(word, stem: true)
        return folded.isEmpty ? nil : folded
    }

    /// Lowercases; with `stem`, drops stop words (returning "") and stems; folds accents last.
    private func fold(_ word: Substring.UnicodeScalarView, stem: Bool) -> String {
        scratch.removeAll(keepingCapacity: true)
        var isASCII = true
        for scalar in word {
            guard scalar.isASCII else { isASCII = false; break }
            let byte = UInt8(truncatingIfNeeded: scalar.value)
            scratch.append(byte >= 0x41 && byte <= 0x5A ? byte + 0x20 : byte)
        }
        var text: String
        if isASCII {
            text = String(decoding: scratch, as: UTF8.self)
        } else {
            var scalars = String.UnicodeScalarView()
            for scalar in word { scalars.append(scalar == "\u{2019}" ? "'" : scalar) }
            // Composed form, so that equal terms are equal bytes (LMDB keys compare bytes).
            text = String(scalars).lowercased().precomposedStringWithCanonicalMapping
        }
        if stem {
            if !stopWords.isEmpty && stopWords.contains(text) { return "" }
            if let stemmer { text = String(decoding: stemmer.stem(Array(text.utf8)), as: UTF8.self) }
        }
        if ignoreAccents && !isASCII {
            text = text.folding(options: .diacriticInsensitive, locale: nil).precomposedStringWithCanonicalMapping
        }
        return Self.cut(text)
    }

    private static func cut(_ text: String) -> String {
        guard text.utf8.count > maximumTermLength else { return text }
        var result = String.UnicodeScalarView()
        var length = 0
        for scalar in text.unicodeScalars {
            length += UTF8.width(scalar)
            if length > maximumTermLength { break }
            result.append(scalar)
        }
        return String(result)
    }

    // MARK: - Word boundaries

    private enum Kind { case letter, digit, mark, ideograph, midLetter, midNumber, midBoth, other }

    private static func kind(_ scalar: Unicode.Scalar) -> Kind {
        let value = scalar.value
        if value < 0x80 {
            switch value {
            case 0x30...0x39: return .digit
            case 0x41...0x5A, 0x61...0x7A, 0x5F: return .letter
            case 0x27: return .midBoth  // ' joins letters (don't) and digits (as UAX #29's Single_Quote)
            case 0x2E: return .midBoth  // .
            case 0x2C, 0x3B: return .midNumber  // , ;
            default: return .other
            }
        }
        switch value {
        case 0x2019, 0x00B7, 0x2027, 0x05F4: return .midLetter
        case 0x2018, 0x2024, 0xFE52, 0xFF07, 0xFF0E: return .midBoth
        default: break
        }
        let properties = scalar.properties
        if properties.isIdeographic { return .ideograph }
        switch properties.generalCategory {
        case .decimalNumber: return .digit
        case .nonspacingMark, .spacingMark, .enclosingMark, .format: return .mark
        case .connectorPunctuation, .letterNumber, .otherNumber: return .letter
        default: return properties.isAlphabetic ? .letter : .other
        }
    }

    /// Calls `body` with each word of `text`, in order.
    static func forEachWord(in text: String, _ body: (Substring.UnicodeScalarView) throws -> Void) rethrows {
        let scalars = text.unicodeScalars
        var index = scalars.startIndex
        var start: String.Index?
        var last = Kind.other
        while index < scalars.endIndex {
            let current = kind(scalars[index])
            switch current {
            case .letter, .digit:
                if start == nil { start = index }
                last = current
            case .mark:
                break  // part of the word it follows; outside a word, ignored
            case .ideograph:
                if let begin = start { try body(scalars[begin..<index]); start = nil }
                try body(scalars[index..<scalars.index(after: index)])
            case .midLetter, .midNumber, .midBoth:
                guard let begin = start else { break }
                let next = scalars.index(after: index)
                if next < scalars.endIndex {
                    let following = kind(scalars[next])
                    let joinsLetters = current != .midNumber && last == .letter && following == .letter
                    let joinsDigits = current != .midLetter && last == .digit && following == .digit
                    if joinsLetters || joinsDigits {
                        index = next
                        continue
                    }
                }
                try body(scalars[begin..<index])
                start = nil
            case .other:
                if let begin = start { try body(scalars[begin..<index]); start = nil }
            }
            index = scalars.index(after: index)
        }
        if let begin = start { try body(scalars[begin..<scalars.endIndex]) }
    }
}
