/// The result columns of a query over one collection whose every column is the document's id, a
/// path with static steps into it (`SELECT META().id, name.first …`) or the whole document
/// (`SELECT META().id, * …`), computed straight from each fetched document's stored bytes
/// (``StoredDocument``) inside the read transaction.
///
/// An index lookup then copies no body out of the map: scalars are read where they lie, and only
/// a container a column ends at is copied, into an owned encoding (a full scan's rows keep the
/// copy of the body the scan made). Every value it returns is owned, so rows outlive the
/// transaction safely. ``Executor`` uses it when the scan needs no WHERE re-evaluation (the index
/// range or the body precheck decides it, or there is none); the values are those the compiled
/// column evaluators give for the same document, without a ``SourceBinding`` or an evaluator
/// call per row.
struct InPlaceProjection: Sendable {
    enum Column: Sendable {
        /// `META().id`.
        case id
        /// A path from the document's root; keys compared as UTF-8, prepared once. No steps: the
        /// whole document (`*`).
        case path([QueryCompiler.CompiledStep], keys: [[UInt8]])

        static func path(_ steps: [QueryCompiler.CompiledStep]) -> Column {
            .path(steps, keys: steps.map { step in if case .key(let key) = step { Array(key.utf8) } else { [] } })
        }

        /// The whole document: `*`, `alias.*`.
        static let wholeDocument = Column.path([])
    }

    let columns: [Column]

    /// The row of `document`: one value per column, nil for MISSING.
    func project(_ document: StoredDocument) -> [Datum?] {
        let root = BorrowedValue(buffer: document.body, offset: 0, depth: 0)
        return columns.map { column in
            switch column {
            case .id:
                return .string(document.id)
            case .path(let steps, _) where steps.isEmpty:
                // What the owned evaluation's `Datum(EncodedValue(bytes: body))` gives, over the
                // scan's copy of the body when it made one.
                return Datum(scalar: root) ?? .stored(EncodedValue(bytes: document.ownedBody()))
            case .path(let steps, let keys):
                return QueryCompiler.walk(root, steps, keys) { EncodedValue(bytes: document.ownedBody()) }
            }
        }
    }
}
