/// A full-text index over one or more string expressions of each document, searched with
/// `MATCH(indexName, 'search terms')` in a query's WHERE and ranked with `RANK(indexName)`.
///
/// Text is cut into words at Unicode word boundaries and case-folded; with `ignoreAccents`,
/// accents are folded too (`café` matches `cafe`). `language`, an ISO-639 code such as `"en"`
/// or `"fr"`, turns on that language's Snowball stemmer (`running` matches `run`) and, where
/// Couchette has a list for it, its stop words; `nil` or `""` means neither. With `where:` only
/// the documents matching the condition are indexed.
///
/// ```swift
/// try await products.createIndex(withName: "descIndex",
///                                config: FullTextIndexConfiguration(["name", "description"], language: "en"))
/// let query = try db.createQuery("""
///     SELECT meta().id, name FROM _default.products
///     WHERE MATCH(descIndex, $q) ORDER BY RANK(descIndex) DESC LIMIT 20
///     """)
/// ```
public struct FullTextIndexConfiguration: IndexConfiguration, Equatable {
    /// The indexed expressions, e.g. `["name", "description"]`; non-string values are not indexed.
    public let expressions: [String]
    /// The condition of a partial index, or nil to index every document.
    public let whereClause: String?
    /// True to fold accents (diacritics) away, in the index and in search strings alike.
    public let ignoreAccents: Bool
    /// The ISO-639 code of the text's language, or nil (or `""`) for no stemming and no stop words.
    public let language: String?

    /// A full-text index over `expressions` (1 to 255 of them), optionally partial (`where`),
    /// accent-folding and stemmed for `language`; an unknown language code makes
    /// `createIndex` throw `.invalidParameter` naming the ones available.
    public init(
        _ expressions: [String], where whereClause: String? = nil, ignoreAccents: Bool = false,
        language: String? = nil
    ) {
        self.expressions = expressions
        self.whereClause = whereClause
        self.ignoreAccents = ignoreAccents
        self.language = language
    }
}
