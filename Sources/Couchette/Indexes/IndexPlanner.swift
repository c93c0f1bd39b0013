/// Chooses, at each execution, how the main collection is read: ranges of one or more indexes
/// (a union of document ids, read back in id order), one index range walked in ORDER BY order
/// (stopping early), or nothing (a full scan).
///
/// It only ever picks an access that finds every document the WHERE can accept: terms are
/// matched to index columns by canonical key, under binary collation; a partial index only when
/// the WHERE contains its condition; an OR only when every branch has an index.
struct IndexPlanner {
    let analysis: IndexAnalysis
    let indexes: [CompiledIndex]
    let context: EvaluationContext

    /// A key range `[lower, upper)` of one index (keys include the index number).
    struct Range {
        var index: CompiledIndex
        var lower: [UInt8]
        var upper: [UInt8]
        /// The conditions bounding the range, joined by AND (one term's text as it is: a point
        /// lookup's range is made per execution, and needs no array for it).
        var terms: String
        var inIndexOrder: Bool = false
        var descending: Bool = false
        /// Every document with an entry in the range passes the WHERE, and no other does: the
        /// WHERE is this one comparison with a string short enough for its key to be whole, and
        /// string keys are exact (one encoding per string; a cut stored key still sorts on the
        /// right side of a whole one). The executor then need not evaluate it again.
        var decidesWhere = false

        var text: String {
            "\(index.name) [\(terms)]" + (inIndexOrder ? " IN INDEX ORDER\(descending ? " (DESC)" : "")" : "")
        }
    }

    enum Choice {
        case union([Range])
        /// Walk one range in order; entries agree on the first `groupColumns` columns form a tie group.
        case ordered(Range, groupColumns: Int, descending: Bool)
    }

    private struct Candidate {
        var ranges: [Range]
        var score: Int
    }

    init(analysis: IndexAnalysis, indexes: [CompiledIndex], context: EvaluationContext) {
        self.analysis = analysis
        self.context = context
        self.indexes = indexes.filter { index in
            guard let required = index.whereKeys else { return false }
            return required.allSatisfy(analysis.conjunctKeys.contains)
        }
    }

    func choose() throws -> Choice? {
        if let ordered = try orderedChoice() { return ordered }
        guard let condition = analysis.condition, let candidate = try candidate(condition) else { return nil }
        return .union(candidate.ranges)
    }

    // MARK: - Access paths (what a prepared query keeps between executions)

    /// Which index serves the query, without the ranges: what ``choose()`` decides from the
    /// indexes alone, so that it holds for any parameter values while the indexes stay the same.
    enum AccessPath: Sendable {
        case fullScan
        /// The ranges of the WHERE's one term on the first column of `index`.
        case term(CompiledIndex)
        /// One range of the WHERE's one term walked in ORDER BY order.
        case ordered(CompiledIndex, groupColumns: Int, descending: Bool)
    }

    /// Whether ``choose()`` picks its index from the indexes alone for `analysis`: a WHERE of at
    /// most one sargable term, and with ORDER BY a term that is no equality or IN. Every index
    /// matching one term scores alike (the first wins), and a single non-equality term can only
    /// bound the first column of an ordered walk, so parameter values change the ranges, never
    /// the index — except to say that nothing matches, which ``instantiate(_:)`` finds again.
    /// Equalities and IN lists decide between composite prefixes and ordered walks by their
    /// values (MISSING, how many values): those queries are planned at every execution.
    static func pathIsStatic(_ analysis: IndexAnalysis) -> Bool {
        switch analysis.condition {
        case nil: return true
        case .term(let term)?:
            guard analysis.order != nil else { return true }
            switch term.predicate {
            case .equal, .among: return false
            default: return true
            }
        default: return false
        }
    }

    /// The access path a choice followed (nil when the ranges alone say nothing matches, which
    /// values decide: such a choice is not kept).
    static func path(of choice: Choice?) -> AccessPath? {
        switch choice {
        case nil: return .fullScan
        case .union(let ranges)?: return ranges.first.map { .term($0.index) }
        case .ordered(let range, let groupColumns, let descending)?:
            return .ordered(range.index, groupColumns: groupColumns, descending: descending)
        }
    }

    /// The choice `path` gives with this execution's values: what ``choose()`` returns for the
    /// same indexes (see ``pathIsStatic(_:)``).
    func instantiate(_ path: AccessPath) throws -> Choice? {
        guard case .term(let term)? = analysis.condition else { return nil }
        switch path {
        case .fullScan:
            return nil
        case .term(let index):
            return .union(try ranges(of: term, in: index))
        case .ordered(let index, let groupColumns, let descending):
            // The walk of `orderedChoice` from column 0: a non-IN term gives at most one range.
            guard var ordered = try ranges(of: term, in: index).first else { return .union([]) }
            ordered.inIndexOrder = true
            ordered.descending = descending
            return .ordered(ordered, groupColumns: groupColumns, descending: descending)
        }
    }

    // MARK: - Ranges

    private func matches(_ index: CompiledIndex, _ term: IndexTerm, column: Int) -> Bool {
        guard column < index.columnKeys.count, index.columnKeys[column] == term.key else { return false }
        switch term.context {
        case .document: return !index.isArray
        case .member(let path): return index.isArray && index.pathKey == path
        }
    }

    /// Tuple-level ranges `[lower, upper)` for `term` on the column after the `fixed` bytes.
    private func tupleRanges(_ term: IndexTerm, fixed: [UInt8]) throws -> [([UInt8], [UInt8])] {
        func point(_ value: Datum?) -> ([UInt8], [UInt8])? {
            value.map { Self.pointTuple($0, after: fixed) }
        }
        var end: [UInt8] { KeyEncoding.successor(ofPrefix: fixed) ?? [0xFF] }  // not made for points
        switch term.predicate {
        case .equal(let value):
            return point(try value(context)).map { [$0] } ?? []
        case .among(let values):
            guard let elements = try values(context)?.elements else { return [] }
            var seen: Set<[UInt8]> = []
            var result: [([UInt8], [UInt8])] = []
            for element in elements where !element.isNull {
                if let range = point(element), seen.insert(range.0).inserted { result.append(range) }
            }
            return result.sorted { $0.0.lexicographicallyPrecedes($1.0) }
        case .range(let low, let high):
            // Comparisons are only true for values that are neither MISSING nor null.
            var lower = fixed + [IndexKey.falseValue], upper = end
            if let low {
                guard let value = try low(context), !value.isNull else { return [] }
                lower = fixed + IndexKey.encode(value)
            }
            if let high {
                guard let value = try high(context), !value.isNull else { return [] }
                upper = KeyEncoding.successor(ofPrefix: fixed + IndexKey.encode(value))!
            }
            return [(lower, upper)]
        case .prefix(let text):
            var start = fixed + [IndexKey.string]
            IndexKey.appendEscaped(text, to: &start)
            return [(start, KeyEncoding.successor(ofPrefix: start)!)]
        case .isNull:
            return point(.null).map { [$0] } ?? []
        case .valued:
            return [(fixed + [IndexKey.falseValue], end)]
        case .notMissing:
            return [(fixed + [IndexKey.null], end)]
        }
    }

    /// The tuple range `[lower, upper)` of the entries whose next column (after the `fixed`
    /// bytes of the columns before it) equals `value`.
    static func pointTuple(_ value: Datum, after fixed: [UInt8] = []) -> ([UInt8], [UInt8]) {
        var bytes = fixed
        IndexKey.append(value, to: &bytes)
        return (bytes, KeyEncoding.successor(ofPrefix: bytes)!)
    }

    /// The range of the entries whose first column equals `value`: what ``pointTuple(_:after:)``
    /// and ``keyRange(_:_:)`` make, built in one buffer. The lower key is the prefix and the
    /// value's key, cut like stored keys; the upper is its successor (also for a cut key, whose
    /// range ends at the successor of its cut bytes).
    static func pointRange(_ index: CompiledIndex, _ value: Datum, _ terms: String) -> Range {
        var lower: [UInt8] = []
        lower.reserveCapacity(index.entriesPrefix.count + 48)
        lower.append(contentsOf: index.entriesPrefix)
        IndexKey.append(value, to: &lower)
        let limit = index.entriesPrefix.count + IndexKey.maximumLength
        if lower.count > limit { lower.removeLast(lower.count - limit) }
        return Range(index: index, lower: lower, upper: KeyEncoding.successor(ofPrefix: lower) ?? [0xFF], terms: terms)
    }

    /// Whole LMDB keys for a tuple range, cut like stored keys (see ``IndexKey/truncated(_:)``).
    static func keyRange(_ index: CompiledIndex, _ tuple: ([UInt8], [UInt8])) -> (lower: [UInt8], upper: [UInt8]) {
        let prefix = index.entriesPrefix
        let limit = IndexKey.maximumLength
        let lower = tuple.0.count > limit ? Array(tuple.0[..<limit]) : tuple.0
        let upper = tuple.1.count > limit ? KeyEncoding.successor(ofPrefix: Array(tuple.1[..<limit])) ?? [0xFF] : tuple.1
        return (prefix + lower, prefix + upper)
    }

    private func range(_ index: CompiledIndex, _ tuple: ([UInt8], [UInt8]), _ terms: [String]) -> Range {
        range(index, tuple, terms.joined(separator: " AND "))
    }

    private func range(_ index: CompiledIndex, _ tuple: ([UInt8], [UInt8]), _ terms: String) -> Range {
        let keys = Self.keyRange(index, tuple)
        return Range(index: index, lower: keys.lower, upper: keys.upper, terms: terms)
    }

    /// Whether a range of `index`'s first column for `term` selects exactly what the WHERE does
    /// (see ``Range/decidesWhere``): the WHERE is `term` alone, compared with a string.
    private func decidesWhere(_ term: IndexTerm, _ index: CompiledIndex) throws -> Bool {
        guard isOneComparison(term, index) else { return false }
        let bound: Evaluator
        switch term.predicate {
        case .equal(let value): bound = value
        case .range(let lower?, nil): bound = lower
        case .range(nil, let upper?): bound = upper
        default: return false
        }
        return Self.hasWholeKey(try bound(context))
    }

    /// The WHERE is `term` alone, on a value index.
    private func isOneComparison(_ term: IndexTerm, _ index: CompiledIndex) -> Bool {
        guard analysis.whereIsOneComparison, !index.isArray, case .document = term.context else { return false }
        return true
    }

    /// A string short enough for its key never to be cut (escapes, type byte, terminator).
    private static func hasWholeKey(_ bound: Datum?) -> Bool {
        guard case .string(let text)? = bound else { return false }
        return 2 * text.utf8.count + 3 < IndexKey.maximumLength
    }

    private static func score(_ predicate: IndexTerm.Predicate) -> Int {
        switch predicate {
        case .equal: 10
        case .among: 8
        case .isNull: 6
        case .prefix: 5
        case .range(let low, let high): low != nil && high != nil ? 5 : 4
        case .valued: 2
        case .notMissing: 1
        }
    }

    // MARK: - Union of ranges

    private func candidate(_ condition: AccessCondition) throws -> Candidate? {
        switch condition {
        case .term(let term):
            // Every index matching the term scores alike: the first one wins.
            guard let index = indexes.first(where: { matches($0, term, column: 0) }) else { return nil }
            return Candidate(ranges: try ranges(of: term, in: index), score: Self.score(term.predicate))
        case .all(let parts):
            var best: Candidate?
            for part in parts {
                if let found = try candidate(part), best == nil || found.score > best!.score { best = found }
            }
            let terms = parts.compactMap { part -> IndexTerm? in if case .term(let term) = part { term } else { nil } }
            for index in indexes where index.columnKeys.count > 1 {
                if let found = try composite(index, terms), best == nil || found.score > best!.score { best = found }
            }
            return best
        case .any(let parts):
            var ranges: [Range] = []
            var score = Int.max
            for part in parts {
                guard let found = try candidate(part) else { return nil }
                ranges += found.ranges
                score = min(score, found.score)
            }
            return Candidate(ranges: ranges, score: max(0, score - 1))
        }
    }

    /// The ranges of `index`'s first column that `term` selects.
    private func ranges(of term: IndexTerm, in index: CompiledIndex) throws -> [Range] {
        if case .equal(let value) = term.predicate {
            // A prepared point lookup's one range, its keys built straight (see ``pointRange``),
            // the value evaluated once.
            guard let value = try value(context) else { return [] }
            var found = Self.pointRange(index, value, term.text)
            found.decidesWhere = isOneComparison(term, index) && Self.hasWholeKey(value)
            return [found]
        }
        let decides = try decidesWhere(term, index)
        return try tupleRanges(term, fixed: []).map { tuple in
            var found = range(index, tuple, term.text)
            found.decidesWhere = decides
            return found
        }
    }

    /// Equalities on the leading columns of a multi-column index, then one more term.
    private func composite(_ index: CompiledIndex, _ terms: [IndexTerm]) throws -> Candidate? {
        guard let (fixed, texts, column) = try equalityPrefix(index, terms), !texts.isEmpty else { return nil }
        guard let fixed else { return Candidate(ranges: [], score: 10 * texts.count) }
        if column < index.columnKeys.count, let next = terms.first(where: { matches(index, $0, column: column) }) {
            let terms = texts + [next.text]
            return Candidate(
                ranges: try tupleRanges(next, fixed: fixed).map { range(index, $0, terms) },
                score: 10 * texts.count + Self.score(next.predicate))
        }
        guard texts.count > 1 else { return nil }  // a single equality is the plain candidate
        return Candidate(ranges: [range(index, (fixed, KeyEncoding.successor(ofPrefix: fixed)!), texts)], score: 10 * texts.count)
    }

    /// The bytes of the equalities on the index's leading columns (nil bytes: an equality with
    /// MISSING, which nothing matches), their texts, and the first column without one.
    private func equalityPrefix(_ index: CompiledIndex, _ terms: [IndexTerm]) throws -> ([UInt8]?, [String], Int)? {
        var fixed: [UInt8] = []
        var texts: [String] = []
        var column = 0
        while column < index.columnKeys.count {
            guard
                let term = terms.first(where: { term in
                    if case .equal = term.predicate { return matches(index, term, column: column) }
                    return false
                }), case .equal(let value) = term.predicate
            else { break }
            guard let datum = try value(context) else { return (nil, texts + [term.text], column + 1) }
            IndexKey.append(datum, to: &fixed)
            texts.append(term.text)
            column += 1
        }
        return (fixed, texts, column)
    }

    // MARK: - Index order

    private func orderedChoice() throws -> Choice? {
        guard let order = analysis.order else { return nil }
        var terms: [IndexTerm] = []
        switch analysis.condition {
        case .term(let term)?: terms = [term]
        case .all(let parts)?: terms = parts.compactMap { part in if case .term(let term) = part { term } else { nil } }
        default: break
        }
        for index in indexes where !index.isArray {
            guard let (fixedBytes, texts, equalities) = try equalityPrefix(index, terms) else { continue }
            for start in stride(from: equalities, through: 0, by: -1) {
                guard start + order.keys.count <= index.columnKeys.count,
                    Array(index.columnKeys[start..<start + order.keys.count]) == order.keys.map(Optional.some)
                else { continue }
                // Documents whose first column is MISSING are not in the index: some term must
                // exclude them (an equality on a leading column, or a term on the first).
                var fixed: [UInt8] = []
                if start > 0 {
                    guard let fixedBytes else { return .union([]) }
                    var offset = 0
                    fixedBytes.withUnsafeBytes { bytes in
                        for _ in 0..<start { offset = IndexKey.end(of: bytes, at: offset) ?? bytes.count }
                    }
                    fixed = Array(fixedBytes[..<offset])
                }
                var tuple: ([UInt8], [UInt8])
                var text = Array(texts.prefix(start))
                if let term = terms.first(where: { matches(index, $0, column: start) }) {
                    let ranges = try tupleRanges(term, fixed: fixed)
                    guard ranges.count <= 1 else { continue }
                    guard let only = ranges.first else { return .union([]) }
                    tuple = only
                    text.append(term.text)
                } else {
                    guard start > 0 else { continue }
                    tuple = (fixed, KeyEncoding.successor(ofPrefix: fixed)!)
                }
                var ordered = range(index, tuple, text)
                ordered.decidesWhere = start == 0 && text.count == 1 && terms.count == 1 ? try decidesWhere(terms[0], index) : false
                ordered.inIndexOrder = true
                ordered.descending = order.descending
                return .ordered(ordered, groupColumns: start + order.keys.count, descending: order.descending)
            }
        }
        return nil
    }
}
