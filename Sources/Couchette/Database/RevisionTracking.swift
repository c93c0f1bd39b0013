/// Something on the caller's side that remembers which stored revision it shows: a
/// ``MutableDocument``, or a document model's ``DocumentID``. The write path tells it the revision
/// it now stands for once its write has committed.
protocol RevisionTracking {
    func didCommit(revisionID: String, sequence: UInt64)
}

extension MutableDocument: RevisionTracking {
    func didCommit(revisionID: String, sequence: UInt64) {
        self.revisionID = revisionID
        self.sequence = sequence
    }
}
