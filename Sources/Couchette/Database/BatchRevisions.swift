/// The revisions the writes of one ``Batch`` got, filled in once it has committed: a
/// `MutableDocument` saved in the batch points here (``BatchWrite``) and takes its new revision
/// and sequence from here when it is next asked for them.
///
/// So the batch holds none of the documents saved in it. A document its caller drops right after
/// the save (`for task in tasks { try batch.save(document: MutableDocument(…)…) }`) is freed at
/// once, and the next one reuses its memory while it is still in cache; held by the batch, every
/// document would stay until the commit, each in memory never touched before, and then be freed
/// in one pass over cold memory. Models stay tracked by the batch: their objects live on anyway.
final class BatchRevisions {
    /// Where one write sits in the batch: its operation, and its index in a
    /// ``WriteOperation/saveJSON(_:)`` run (-1 for an operation of its own).
    struct Position {
        let operation: Int
        let entry: Int
    }

    /// What a write left its document with.
    enum Result {
        /// The batch has not committed yet.
        case pending
        /// The write stored this revision, with this sequence.
        case written(revision: StoredRevisionID, sequence: UInt64)
        /// Nothing that changes the document: the batch failed, or the write did nothing.
        case unchanged
    }

    /// What the batch's writes did, once it committed: read by every lookup, never changed.
    private final class Committed {
        let outcomes: [WriteOutcome]
        /// The revisions of each ``WriteOperation/saveJSON(_:)`` run, in operation order.
        let runs: [(operation: Int, revisions: JSONDocumentBatch.Revisions)]

        init(outcomes: [WriteOutcome], runs: [(operation: Int, revisions: JSONDocumentBatch.Revisions)]) {
            self.outcomes = outcomes
            self.runs = runs
        }

        /// The revisions of the run that is operation `operation`.
        func run(_ operation: Int) -> JSONDocumentBatch.Revisions? {
            var low = 0
            var high = runs.count
            while low < high {
                let middle = (low + high) / 2
                if runs[middle].operation < operation { low = middle + 1 } else { high = middle }
            }
            return low < runs.count && runs[low].operation == operation ? runs[low].revisions : nil
        }
    }

    private var committed: Committed?
    private var isAbandoned = false

    /// Records what the batch's `operations` did: `outcomes`, one each.
    func commit(_ outcomes: [WriteOutcome], of operations: [WriteOperation]) {
        guard committed == nil, !isAbandoned else { return }
        var runs: [(operation: Int, revisions: JSONDocumentBatch.Revisions)] = []
        for (index, outcome) in outcomes.enumerated() where index < operations.count {
            guard case .savedDocuments(let written) = outcome, case .saveJSON(let documents) = operations[index] else { continue }
            runs.append((index, JSONDocumentBatch.Revisions(documents, written)))
        }
        committed = Committed(outcomes: outcomes, runs: runs)
    }

    /// Records that the batch will not be written (its body or its commit failed).
    func abandon() {
        if committed == nil { isAbandoned = true }
    }

    /// What the write at `position` left its document with.
    func result(at position: Position) -> Result {
        guard let committed else { return isAbandoned ? .unchanged : .pending }
        guard position.operation < committed.outcomes.count else { return .unchanged }
        switch committed.outcomes[position.operation] {
        case .saved(let revision, let sequence):
            return .written(revision: revision, sequence: sequence)
        case .savedDocuments where position.entry >= 0:
            guard let run = committed.run(position.operation) else { return .unchanged }
            let (revision, sequence) = run.revision(of: position.entry)
            return .written(revision: revision, sequence: sequence)
        case .savedDocuments, .conflict, .done:
            return .unchanged
        }
    }
}

/// A `MutableDocument`'s writes in one batch: which batch (its ``BatchRevisions``), the
/// collections it was saved to there (saving it again in that batch builds on the first write),
/// and where its last write sits, to take its new revision from once the batch has committed.
struct BatchWrite {
    let revisions: BatchRevisions
    var collections = WrittenCollections()
    var position: BatchRevisions.Position?
}
