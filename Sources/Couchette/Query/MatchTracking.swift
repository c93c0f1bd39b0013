/// What lets a live query skip re-running after a commit that provably cannot change its
/// results.
///
/// For a query over one collection (no JOIN, no UNNEST), the results are a function of the set
/// of documents that pass WHERE (and of their contents). A commit that changed documents none of
/// which passed WHERE at the last evaluation, and none of which passes it now, leaves that set and
/// those contents unchanged, so the results are unchanged — with ORDER BY, LIMIT, GROUP BY or
/// aggregates alike. When the scan stopped early (a LIMIT without ORDER BY), documents after the
/// stopping point were never tested; they were not in the results, and one that changes can only
/// matter if it passes WHERE now, which the check below catches.
///
/// The check reads each changed document in a fresh snapshot and evaluates WHERE on it; it is
/// made by the live query's evaluation task, never on the writer thread.
enum MatchTracking {
    /// More matching documents than this are not tracked: the live query then re-runs after
    /// every commit that touches its collection.
    static let limit = 50_000

    static func applies(to plan: QueryPlan) -> Bool {
        guard plan.sources.count == 1, plan.stages.isEmpty, case .collection = plan.sources[0].kind else { return false }
        // RANK() depends on every indexed document (their count and lengths), not only on
        // those that match: a full-text query re-runs after each commit to its collection.
        if plan.mainScan is FullTextScan { return false }
        return true
    }

    /// Whether a live query may keep its matching documents (``MatchedDocuments``): the scan
    /// never stops early (no LIMIT or OFFSET), so every matching document was seen.
    static func keepsDocuments(of plan: QueryPlan) -> Bool {
        applies(to: plan) && plan.limit == nil && plan.offset == nil
    }
}

extension Executor {
    /// Whether any of `ids` is now a document of the main collection that passes WHERE (every
    /// visible document does when there is no WHERE). WHERE may be split in two (the conjuncts
    /// on the FROM document, then the rest): both must pass.
    func anyMatches(_ ids: some Sequence<String>, in reader: StoreReader, parameters: [String: Datum]) throws -> Bool {
        guard case .collection(let spec) = plan.sources.first?.kind else { return true }
        let context = EvaluationContext(plan, parameters: parameters)
        let includeDeleted = plan.sources[0].includeDeleted
        let now = reader.clock.nowMilliseconds()
        return try reader.read { snapshot in
            for id in ids {
                guard let binding = try CollectionScan.lookup(snapshot, spec, id, now: now, includeDeleted: includeDeleted) else {
                    continue
                }
                context.sources[0] = binding
                if try Self.passes(plan.mainFilter, context), try Self.passes(plan.filter, context) { return true }
            }
            return false
        }
    }
}
