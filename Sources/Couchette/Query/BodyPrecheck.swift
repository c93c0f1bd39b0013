/// The conjuncts of a query's WHERE that can be tried on a stored body where it lies — in LMDB's
/// memory map, before a scan copies the record out: `path LIKE 'pattern'` and `path = value`,
/// `<`, `<=`, `>`, `>=` (a literal or a parameter), on a fixed path of the main document.
///
/// A document one of them rejects cannot pass the WHERE: a conjunct that is not true makes the AND
/// not true, so the scan skips the record without copying or binding it. When the terms are the
/// whole filter after the scan and all certainly hold, the row passes without the filter being
/// evaluated again (``Judgement/passes``); otherwise it is evaluated as usual. So both verdicts,
/// true and false, must be exact, and every case in doubt is left to the evaluators: text that is
/// not plain ASCII, numbers other than two integers, values of different types, a LIKE pattern
/// the byte matcher does not take.
/// MISSING (an absent or damaged path) rejects, as it makes the conjunct MISSING.
///
/// ```swift
/// // WHERE name.last LIKE '%an%' AND visits >= $least
/// if let filter = try plan.precheck?.bind(context), filter.rejects(body) { /* skip the record */ }
/// ```
struct BodyPrecheck: Sendable {
    /// One step of a fixed path from the document's root.
    enum Step: Sendable {
        case key([UInt8])
        /// An array position; negative counts from the end, as in ``QueryCompiler``'s paths.
        case index(Int)
    }

    /// Which orders of the stored value against the constant make a comparison true.
    struct Outcomes: Sendable {
        var less = false, equal = false, greater = false

        func accept(_ order: Int) -> Bool { order < 0 ? less : order == 0 ? equal : greater }
    }

    enum Test: Sendable {
        case like(LikePattern.Compiled, negated: Bool)
        /// `path op value`, the path on the left.
        case compare(Evaluator, Outcomes)
    }

    struct Term: Sendable {
        var path: [Step]
        var test: Test
    }

    let terms: [Term]
    /// Every conjunct of the filter evaluated after the scan (the WHERE, or with JOINs and
    /// UNNESTs the conjuncts on the FROM document alone: ``QueryPlan/mainFilter``) is one of the
    /// terms: a document on which each term certainly holds passes that filter without it being
    /// evaluated again (``BodyFilter/judge(_:)``).
    var decidesFilter = false

    /// The terms with this execution's values; nil when none of them can judge anything.
    func bind(_ context: EvaluationContext) throws -> BodyFilter? {
        var bound: [BodyFilter.Term] = []
        for term in terms {
            switch term.test {
            case .like(let pattern, let negated):
                bound.append(BodyFilter.Term(path: term.path, test: .like(pattern, negated: negated)))
            case .compare(let evaluator, let accept):
                switch try evaluator(context) {
                case .int(let number)?:
                    bound.append(BodyFilter.Term(path: term.path, test: .integer(number, accept: accept)))
                case .string(let text)?:
                    bound.append(BodyFilter.Term(path: term.path, test: .text(Array(text.utf8), accept: accept)))
                case nil:
                    // `path op MISSING` is MISSING for every document: nothing passes.
                    bound.append(BodyFilter.Term(path: [], test: .never))
                case .null?:
                    // Null compares to null (or MISSING): never true, except `null = null`.
                    if accept.less || accept.greater { bound.append(BodyFilter.Term(path: [], test: .never)) }
                default:
                    continue
                }
            }
        }
        // A term left out (a constant of a type the bytes are not compared with) decides nothing.
        return bound.isEmpty ? nil : BodyFilter(terms: bound, decidesFilter: decidesFilter && bound.count == terms.count)
    }
}

/// A ``BodyPrecheck`` with one execution's values, applied to stored bodies.
struct BodyFilter {
    enum Test {
        case like(LikePattern.Compiled, negated: Bool)
        case integer(Int64, accept: BodyPrecheck.Outcomes)
        /// Compared with a stored string in UTF-8 byte order (binary collation).
        case text([UInt8], accept: BodyPrecheck.Outcomes)
        case never
    }

    struct Term {
        var path: [BodyPrecheck.Step]
        var test: Test
    }

    let terms: [Term]
    /// The terms are every conjunct of the filter after the scan (``BodyPrecheck/decidesFilter``).
    var decidesFilter = false

    /// What the terms tell of one stored body.
    enum Judgement {
        /// The document certainly fails the WHERE: the scan skips it.
        case rejects
        /// Every term certainly holds, and they are the whole filter after the scan: the
        /// document passes it (see ``ScanOrder/rowPassesFilter``).
        case passes
        /// The filter decides.
        case unknown
    }

    /// True when the document whose encoded body is `body` certainly fails the WHERE.
    func rejects(_ body: UnsafeRawBufferPointer) -> Bool { judge(body) == .rejects }

    /// Whether the document whose encoded body is `body` certainly fails the WHERE, certainly
    /// passes the filter after the scan, or neither.
    func judge(_ body: UnsafeRawBufferPointer) -> Judgement {
        let root = BorrowedValue(buffer: body, offset: 0, depth: 0)
        var certain = decidesFilter
        for term in terms {
            if case .never = term.test { return .rejects }
            guard let value = Self.follow(term.path, from: root) else { return .rejects }  // MISSING
            switch Self.outcome(term.test, value) {
            case false?: return .rejects
            case true?: continue
            case nil: certain = false
            }
        }
        return certain ? .passes : .unknown
    }

    /// The `skipping` test a full scan hands ``StoreSnapshot/forEachVisibleRecord(_:now:includingDeleted:skipping:_:)``:
    /// true for a body the filter rejects; for the others it sets `order`'s
    /// ``ScanOrder/rowPassesFilter`` for the row the scan then delivers.
    func skipsRejected(reportingTo order: ScanOrder) -> (UnsafeRawBufferPointer) -> Bool {
        { body in
            let judgement = judge(body)
            order.rowPassesFilter = judgement == .passes
            return judgement == .rejects
        }
    }

    private static func follow(_ path: [BodyPrecheck.Step], from root: BorrowedValue) -> BorrowedValue? {
        var value = root
        for step in path {
            let next: BorrowedValue?
            switch step {
            case .key(let key): next = key.withUnsafeBufferPointer { value.value(forKey: $0) }
            case .index(let position): next = value.element(at: position < 0 ? value.count + position : position)
            }
            guard let next else { return nil }
            value = next
        }
        return value
    }

    /// The stored UTF-8 of a string value, when it is plain ASCII (so the evaluators' `String`
    /// of it has exactly these bytes); nil otherwise.
    private static func asciiText(_ value: BorrowedValue) -> UnsafeRawBufferPointer? {
        guard value.tag == ValueTag.string, let range = value.lengthPrefixed(at: value.offset + 1) else { return nil }
        let bytes = UnsafeRawBufferPointer(rebasing: value.buffer[range])
        return bytes.allSatisfy({ $0 < 0x80 }) ? bytes : nil
    }

    /// The conjunct's value for `value` (not MISSING) when the bytes settle it: false when it is
    /// certainly not true, true when it certainly is, nil when only the evaluators can tell.
    private static func outcome(_ test: Test, _ value: BorrowedValue) -> Bool? {
        switch test {
        case .never:
            return false
        case .like(let pattern, let negated):
            // LIKE on a value that is not a string is null.
            guard value.tag == ValueTag.string else { return false }
            guard let bytes = asciiText(value), let matched = pattern.matchesBytes(bytes) else { return nil }
            return matched != negated
        case .integer(let number, let accept):
            guard let stored = value.integer else { return nil }
            return accept.accept(stored == number ? 0 : (stored < number ? -1 : 1))
        case .text(let text, let accept):
            guard let bytes = asciiText(value) else { return nil }
            return accept.accept(text.withUnsafeBytes { Self.order(bytes, $0) })
        }
    }

    private static func order(_ left: UnsafeRawBufferPointer, _ right: UnsafeRawBufferPointer) -> Int {
        let common = min(left.count, right.count)
        for index in 0..<common where left[index] != right[index] { return left[index] < right[index] ? -1 : 1 }
        return left.count == right.count ? 0 : (left.count < right.count ? -1 : 1)
    }
}
