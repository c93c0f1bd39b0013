/// The documents that passed WHERE at a live query's last evaluation, kept with their contents so
/// the next evaluation re-reads only the documents that commits changed since (see
/// ``Executor/runIncrementally(_:parameters:previous:changed:)``).
///
/// Kept for queries over one collection (no JOIN, no UNNEST, no full-text MATCH: see
/// ``MatchTracking``) without LIMIT or OFFSET whose main scan delivered documents in id order (a
/// full scan, or an index scan whose key ranges are read back in id order). Such a query's
/// results are a function of these documents taken in id order: the rest of the plan (grouping,
/// aggregates, HAVING, projection, DISTINCT, ORDER BY) runs again over them, exactly as over a
/// fresh scan.
struct MatchedDocuments: Sendable {
    /// More matching documents than this are not kept (their bodies stay in memory): the live
    /// query then re-runs its whole plan.
    static let limit = 10_000

    /// In document-id order (UTF-8 byte order, the order of the `documents` table's keys).
    private(set) var bindings: [SourceBinding]
    /// The collection's last sequence in the snapshot these documents were read in: changes after
    /// it are read from the `sequences` table of the next snapshot, so a commit that snapshot
    /// already shows is re-checked even before its commit observer has named its documents.
    var lastSequence: UInt64
    /// The collection's purge count in that snapshot: a purge leaves no sequence entry, so a
    /// snapshot whose count differs may lack kept documents that no commit observer has named yet.
    /// Expired documents' purges count too: ``dropExpired(now:)`` removes kept documents by the
    /// expiration they were read with, but setting one later leaves no sequence entry of its own,
    /// and the purge removes the document's.
    var purges: UInt64

    /// Documents delivered by a scan in id order; nil when they are not in that order.
    init?(scanned bindings: [SourceBinding], lastSequence: UInt64, purges: UInt64) {
        for index in bindings.indices.dropFirst() where !Self.precedes(bindings[index - 1].id, bindings[index].id) { return nil }
        self.bindings = bindings
        self.lastSequence = lastSequence
        self.purges = purges
    }

    var count: Int { bindings.count }

    func contains(_ id: String) -> Bool { position(of: id).found }

    /// Puts `binding` in, or takes `id` out (nil binding); true when that changed anything.
    mutating func update(_ id: String, _ binding: SourceBinding?) -> Bool {
        let (index, found) = position(of: id)
        switch (found, binding) {
        case (true, let binding?):
            bindings[index] = binding
        case (true, nil):
            bindings.remove(at: index)
        case (false, let binding?):
            bindings.insert(binding, at: index)
        case (false, nil):
            return false
        }
        return true
    }

    /// Drops the documents whose expiration time has passed: a fresh scan would not see them.
    mutating func dropExpired(now: UInt64) -> Bool {
        let before = bindings.count
        bindings.removeAll { $0.expiration != 0 && $0.expiration <= now }
        return bindings.count != before
    }

    /// Binary search by id: where `id` is, or where it would go.
    private func position(of id: String) -> (index: Int, found: Bool) {
        var low = 0
        var high = bindings.count
        while low < high {
            let middle = (low + high) / 2
            let current = bindings[middle].id
            if current == id { return (middle, true) }
            if Self.precedes(current, id) { low = middle + 1 } else { high = middle }
        }
        return (low, false)
    }

    /// The `documents` table's key order: UTF-8 bytes, not Swift's (normalizing) `String` order.
    private static func precedes(_ a: String, _ b: String) -> Bool {
        a.utf8.lexicographicallyPrecedes(b.utf8)
    }
}

extension Executor {
    /// What an incremental evaluation found.
    enum IncrementalOutcome {
        /// None of the changed documents passed WHERE before or passes it now: the results are
        /// those of the last evaluation.
        case unchanged(MatchedDocuments)
        /// The plan ran again over the updated documents.
        case evaluated(rows: [[Datum?]], documents: MatchedDocuments)
        /// Too many documents changed or match: run the whole plan instead.
        case tooMany
    }

    /// Brings `previous` up to date, reading only the documents in `changed` and those the
    /// `sequences` table shows changed after `previous.lastSequence`, in one fresh snapshot; then
    /// runs the rest of the plan over the matching documents in id order, as a full scan would
    /// deliver them.
    func runIncrementally(
        _ reader: StoreReader, parameters: [String: Datum], previous: MatchedDocuments, changed: Set<String>
    ) throws -> IncrementalOutcome {
        guard case .collection(let spec) = plan.sources.first?.kind else { return .tooMany }
        try reader.checkUsable(spec)
        let context = EvaluationContext(plan, parameters: parameters)
        let includeDeleted = plan.sources[0].includeDeleted
        let now = reader.clock.nowMilliseconds()
        return try reader.read { snapshot -> IncrementalOutcome in
            var documents = previous
            var changed = changed
            // Purged since the kept snapshot: which documents is known only from the commits'
            // observers, which may not have run yet (and a kept copy may not know an expiration
            // set after it was read, whose sequence entry the purge removed). Every kept document
            // is read again in this snapshot instead of showing a purged one beside later changes.
            let purges = try snapshot.purgeCount(spec)
            if purges != documents.purges {
                guard documents.count + changed.count <= LiveQuery.changedIDLimit else { return .tooMany }
                for binding in documents.bindings { changed.insert(binding.id) }
                documents.purges = purges
            }
            let last = try snapshot.lastSequence(spec)
            var tooMany = false
            try snapshot.forEachChange(spec, after: documents.lastSequence, through: last) { _, id, _ in
                changed.insert(id)
                tooMany = changed.count > LiveQuery.changedIDLimit
                return !tooMany
            }
            if tooMany { return .tooMany }
            documents.lastSequence = last
            var modified = documents.dropExpired(now: now)
            let interruption = Interruption(reader: reader)
            for id in changed {
                try interruption.check()
                var passing: SourceBinding?
                if let binding = try CollectionScan.lookup(snapshot, spec, id, now: now, includeDeleted: includeDeleted) {
                    context.sources[0] = binding
                    if try Self.passes(plan.mainFilter, context), try Self.passes(plan.filter, context) { passing = binding }
                }
                if documents.update(id, passing) { modified = true }
            }
            guard modified else { return .unchanged(documents) }
            guard documents.count <= MatchedDocuments.limit else { return .tooMany }
            let sink = Sink(
                plan: plan, context: context, limit: nil, offset: 0, scanOrder: ScanOrder(), interruption: interruption)
            sink.rowsPassedFilter = true  // each kept document passed WHERE when it was last read
            for binding in documents.bindings {
                try interruption.check()
                context.sources[0] = binding
                try sink.accept()
            }
            var rows = try sink.finish()
            if !plan.order.isEmpty {
                let order = plan.order
                rows.sort { a, b in Executor.precedes(a, b, order) }
            }
            return .evaluated(rows: rows.map(\.values), documents: documents)
        }
    }

    /// Whether a WHERE part holds for the current row (none: it does).
    static func passes(_ condition: Evaluator?, _ context: EvaluationContext) throws -> Bool {
        guard let condition else { return true }
        guard let result = try condition(context), !result.isNull else { return false }
        return result.isTruthy
    }
}
