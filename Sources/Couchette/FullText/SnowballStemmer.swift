import CStemmer

/// One Snowball stemmer from Debian's libstemmer. A stemmer keeps state between calls, so it is
/// not shared: each ``FullTextTokenizer`` owns one and is used on one thread at a time.
final class SnowballStemmer {
    private let handle: OpaquePointer

    /// The stemmer for an algorithm name or ISO-639 code libstemmer knows (`"en"`, `"english"`),
    /// or nil when it knows none (or is out of memory).
    init?(algorithm: String) {
        guard let handle = sb_stemmer_new(algorithm, "UTF_8") else { return nil }
        self.handle = handle
    }

    deinit { sb_stemmer_delete(handle) }

    /// The stem of a case-folded word (its UTF-8 bytes); the word itself when stemming fails.
    func stem(_ word: [UInt8]) -> [UInt8] {
        guard let size = Int32(exactly: word.count) else { return word }
        let result = word.withUnsafeBufferPointer { buffer in sb_stemmer_stem(handle, buffer.baseAddress, size) }
        guard let result else { return word }  // out of memory: index the word unstemmed
        let length = Int(sb_stemmer_length(handle))
        return Array(UnsafeBufferPointer(start: result, count: max(0, length)))
    }

    /// The algorithm names libstemmer offers (for error messages).
    static let algorithms: [String] = {
        var names: [String] = []
        guard var cursor = sb_stemmer_list() else { return names }
        while let name = cursor.pointee {
            names.append(String(cString: name))
            cursor += 1
        }
        return names
    }()

    /// The libstemmer name for an index's `language`: nil for nil or `""` (no stemming), the
    /// lowercased code otherwise (`"en-US"` and `"en_US"` count as `"en"`).
    /// - Throws: `.invalidParameter` naming the language when libstemmer has no stemmer for it.
    static func algorithm(forLanguage language: String?) throws -> String? {
        guard let language, !language.isEmpty else { return nil }
        let code = language.lowercased().split(whereSeparator: { $0 == "-" || $0 == "_" }).first.map(String.init) ?? ""
        guard !code.isEmpty, code.utf8.count <= 32, SnowballStemmer(algorithm: code) != nil else {
            throw CouchetteError(
                .invalidParameter,
                "full-text language '\(language)' has no Snowball stemmer; use an ISO-639 code or one of: \(algorithms.joined(separator: ", "))"
            )
        }
        return code
    }
}
