/// Something on the caller's side that remembers which stored revision it shows: a
/// ``MutableDocument``, or a document model's ``DocumentID``. The write path tells it the revision
/// it now stands for once its write has committed.
protocol RevisionTracking {
    func didCommit(revisionID: String, sequence: UInt64)
    /// ``didCommit(revisionID:sequence:)`` with the revision as its record stores it; by default
    /// formatted as text.
    func didCommit(revision: StoredRevisionID, sequence: UInt64)
}

extension RevisionTracking {
    func didCommit(revision: StoredRevisionID, sequence: UInt64) { didCommit(revisionID: revision.text, sequence: sequence) }
}

extension MutableDocument: RevisionTracking {
    func didCommit(revisionID: String, sequence: UInt64) {
        self.revisionID = revisionID
        self.sequence = sequence
    }

    /// Keeps a packed revision packed: its text is formatted only if ``revisionID`` is read.
    func didCommit(revision: StoredRevisionID, sequence: UInt64) {
        self.revision = revision
        self.sequence = sequence
    }
}
