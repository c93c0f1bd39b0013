/// Something on the caller's side that remembers which stored revision it shows: a
/// ``MutableDocument``, or a document model's ``DocumentID``. The write path tells it the revision
/// it now stands for once its write has committed.
protocol RevisionTracking {
    func didCommit(revisionID: String, sequence: UInt64)
    /// The same, with the revision as the writer has it: a tracker that keeps it so formats no
    /// text (a batch of new documents learns thousands of revisions).
    func didCommit(revision: StoredRevisionID, sequence: UInt64)
}

extension RevisionTracking {
    func didCommit(revision: StoredRevisionID, sequence: UInt64) {
        didCommit(revisionID: revision.text, sequence: sequence)
    }
}

extension MutableDocument: RevisionTracking {
    func didCommit(revisionID: String, sequence: UInt64) {
        self.revisionID = revisionID
        self.sequence = sequence
    }
}
