extension Database {
    /// Runs `body` again and again, each time with a new batch that commits as its own
    /// transaction, until the body returns false: the bulk-loading loop, for imports that commit
    /// a few thousand documents at a time.
    ///
    /// The same as calling ``inBatch(_:)`` in a loop, except that each batch's commit (the
    /// writer's work and the disk sync) runs while the body fills the next batch, instead of the
    /// caller waiting for it: an import of JSON documents then takes about the longer of
    /// transcoding and writing instead of their sum. At most one batch is committing while the next
    /// is filled. When this returns, every batch is committed.
    ///
    /// ```swift
    /// let lines = try String(contentsOfFile: "people.jsonl", encoding: .utf8).split(separator: "\n")
    /// var next = lines.makeIterator()
    /// try await db.inBatches { batch in
    ///     for _ in 0..<1_000 {
    ///         guard let line = next.next() else { return false }
    ///         try batch.save(id: nil, json: String(line), in: people)
    ///     }
    ///     return true
    /// }
    /// ```
    ///
    /// - Each batch is atomic: a crash, or an error, keeps whole batches, in order.
    /// - A body that throws writes nothing of its batch; the batch before it (which may still be
    ///   committing) is waited for, and the error is thrown. A batch whose commit fails (a
    ///   `.conflict` under `.failOnConflict`, `.full`) throws that error once the body running
    ///   meanwhile has returned; that body's batch is then not written, and the body is not called
    ///   again.
    /// - A batch that saves `MutableDocument`s or models is waited for before the next body runs,
    ///   so that they carry their new revisions (saving one again in the next batch builds on it).
    ///
    /// - Parameter body: Fills one batch; returns false when there is nothing more to write
    ///   (the batch it filled is still committed). Synchronous, like ``inBatch(_:)``'s.
    /// - Throws: The first error of a body or a commit; `.notOpen` for a closed database;
    ///   `CancellationError` when the task is cancelled while a batch waits for the writer (that
    ///   batch and the later ones are not written; see <doc:TheWritePath>).
    public nonisolated(nonsending) func inBatches(_ body: (Batch) throws -> Bool) async throws {
        var committing: BatchCommit?
        do {
            while true {
                try core.checkOpen()
                let batch = Batch(database: self)
                let more: Bool
                do {
                    more = try body(batch)
                } catch {
                    core.blobs.release(batch.heldBlobs)
                    throw error
                }
                batch.close()
                if let previous = committing {
                    committing = nil
                    do {
                        try await previous.finish()
                    } catch {
                        core.blobs.release(batch.heldBlobs)
                        throw error
                    }
                }
                if batch.operations.isEmpty {
                    core.blobs.release(batch.heldBlobs)
                } else {
                    let commit = BatchCommit(batch, in: self)
                    // A batch with tracked documents or models is waited for: the next body may
                    // save them again on top of their new revisions.
                    if batch.tracksRevisions || !more { try await commit.finish() } else { committing = commit }
                }
                if !more { return }
            }
        } catch {
            // The batch still committing was queued before the failure: it is waited for, so that
            // what is written is settled when this returns. Its own error comes first — unless
            // the task was cancelled and it was withdrawn: then the body's error says more.
            if let committing {
                do {
                    try await committing.finish()
                } catch is CancellationError {
                    throw error
                }
            }
            throw error
        }
    }
}

/// One batch of ``Database/inBatches(_:)`` on its way through the write queue: queued at once,
/// committed by the writer thread while the caller goes on.
private struct BatchCommit {
    let batch: Batch
    let write: PendingWrite

    /// Queues `batch`'s operations for the writer thread (never committed on the caller's thread,
    /// which fills the next batch meanwhile).
    init(_ batch: Batch, in database: Database) {
        self.batch = batch
        let write = PendingWrite(batch.operations, isAtomic: true, updateRevisions: batch.updateRevisions)
        self.write = write
        _ = database.core.writeQueue.append(write, mayCommitHere: false)
    }

    /// Waits for the commit; gives the batch's documents their revisions, or throws its error.
    func finish() async throws {
        await write.completion()
        defer { batch.database.core.blobs.release(batch.heldBlobs) }
        batch.apply(try write.outcomes())
    }
}
