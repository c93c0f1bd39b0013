// Document models in a batch: encoded when the method is called, committed with the batch.

extension Batch {
    /// Adds the save of a model object to the batch.
    ///
    /// The object is encoded now; later edits are not included. After the batch commits, the
    /// object is bound to its new revision, and a nil `@DocumentID` holds the generated id (one
    /// id per object, however often it is saved in the batch). With `.failOnConflict`, a stale
    /// object fails the whole batch with `.conflict`; an object written earlier in the same batch
    /// builds on that earlier write.
    ///
    /// ```swift
    /// try await db.inBatch { batch in
    ///     for title in ["Buy milk", "Walk the dog"] {
    ///         try batch.save(from: TodoTask(title: title), in: tasks)
    ///     }
    /// }
    /// ```
    ///
    /// - Throws: as ``Collection/save(from:)``, now rather than at commit; `.invalidParameter`
    ///   outside the batch body or for a collection of another database.
    public func save<T: DocumentEncodable>(
        from object: T, in collection: Collection,
        concurrencyControl: ConcurrencyControl = .lastWriteWins
    ) throws {
        try checkOpen()
        if jsonCollection !== collection { try check(collection) }  // a run of saves into one collection checks it once
        let write = try ModelWrite(
            saving: object, blobs: collection.reader.blobs,
            newID: { wrapper in
                wrapper.pendingID(inBatch: serial) ?? DocumentIDGenerator.make()
            })
        heldBlobs += write.heldBlobs
        let reference = write.reference
        if reference.base == nil { try DocumentStore.validate(id: reference.id) }  // checked now: see addNew
        let control = control(for: reference, in: collection, requested: concurrencyControl)
        guard reference.base != nil else {
            // Not bound to a revision: it joins the run of new documents, as a JSON document would.
            return try addNew(id: reference.id, body: write.body, in: collection, control: control, tracking: reference.binding)
        }
        append(
            .save(collection.spec, id: reference.id, body: write.body, base: reference.base, control: control),
            tracking: reference.binding)
    }

    /// Adds the deletion of the document a model object stands for to the batch.
    ///
    /// - Throws: as ``Collection/delete(for:)`` (`.notFound` for an object with no id that was
    ///   not saved earlier in this batch), now rather than at commit.
    public func delete<T: DocumentEncodable>(
        for object: T, in collection: Collection,
        concurrencyControl: ConcurrencyControl = .lastWriteWins
    ) throws {
        try check(collection)
        let reference = try ModelReference(existing: object, pendingID: { $0.pendingID(inBatch: serial) })
        append(
            .delete(
                collection.spec, id: reference.id, base: reference.base,
                control: control(for: reference, in: collection, requested: concurrencyControl)),
            tracking: reference.binding)
    }

    /// The concurrency control of a model write, remembering the object as written. The first
    /// write of an object to a collection checks its revision; later ones in the same batch build
    /// on that write (their base revision is the one the first write replaces).
    private func control(
        for reference: ModelReference, in collection: Collection,
        requested: ConcurrencyControl
    ) -> ConcurrencyControl {
        // Marked on the wrapper: no hashing, no table of every model in the batch.
        let wrapper = reference.wrapper
        var written =
            wrapper.batchWrite.flatMap { $0.batch == serial ? $0 : nil } ?? (
                batch: serial, id: reference.id, collections: WrittenCollections()
            )
        let alreadyWritten = written.collections.insert(collection.spec.number)
        wrapper.batchWrite = written
        return alreadyWritten ? .lastWriteWins : reference.control(requested)
    }
}
