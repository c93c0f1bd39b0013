// Document models on Collection: read, save, delete and purge `Codable` classes.
//
// Every method here is `nonisolated(nonsending)`: it runs on the caller's executor, so a
// `@MainActor` view model passes its own (non-Sendable) model objects. Models are encoded and
// decoded on the caller's side; only Sendable bytes cross into the database actor.

extension Collection {
    // MARK: - Reading

    /// Reads a document as a model object, or nil when it does not exist (or was deleted or
    /// expired).
    ///
    /// The object's `@DocumentID` gets the document's id and, hidden, its revision: saving or
    /// deleting the object later detects whether someone else changed the document meanwhile.
    /// The read runs in its own snapshot on the caller's thread and never waits for writers.
    ///
    /// ```swift
    /// if let task = try await tasks.document(id: "task-1", as: TodoTask.self) {
    ///     task.completed = true
    ///     try await tasks.save(from: task)
    /// }
    /// ```
    ///
    /// - Throws: `DecodingError` (with the coding path of the property) when the document does not
    ///   fit `type`; `.invalidParameter` when `type` has no `@DocumentID` property; `.notOpen`
    ///   when the database is closed or the collection deleted.
    nonisolated(nonsending) public func document<T: DocumentDecodable>(id: String, as type: T.Type) async throws -> T? {
        guard let document = try storedDocument(id: id) else { return nil }
        return try DocumentDecoder.decodeModel(T.self, from: document)
    }

    // MARK: - Saving

    /// Saves a model object as a document, last write wins.
    ///
    /// A nil `@DocumentID` gets a new unique id, assigned to the object once the save returns.
    ///
    /// ```swift
    /// let task = TodoTask(title: "Buy milk")
    /// try await tasks.save(from: task)
    /// print(task.id!)          // the generated id
    /// ```
    ///
    /// - Throws: `.invalidParameter` when a property cannot be stored (NaN, `Data`, an integer
    ///   beyond `Int64`), naming the key path; when the type has no `@DocumentID`; or when the
    ///   object's id was changed after it was read or saved. `.notOpen` after close.
    nonisolated(nonsending) public func save<T: DocumentEncodable>(from object: T) async throws {
        try await save(from: object, concurrencyControl: .lastWriteWins)
    }

    /// Saves a model object with the given concurrency control.
    ///
    /// With `.failOnConflict`, returns `false` and writes nothing (leaving the object as it was)
    /// when the stored document is no longer the revision the object was read at or last saved
    /// as. An object never read — created in code, or decoded from a query result — is compared
    /// against the revision current when the save commits, so it does not conflict.
    ///
    /// ```swift
    /// let task = try await tasks.document(id: "task-1", as: TodoTask.self)!
    /// task.title = "Buy oat milk"
    /// if try await !tasks.save(from: task, concurrencyControl: .failOnConflict) {
    ///     // someone else changed it: read it again and retry
    /// }
    /// ```
    ///
    /// - Returns: `true` when the document was saved.
    /// - Throws: as ``save(from:)``.
    @discardableResult
    nonisolated(nonsending) public func save<T: DocumentEncodable>(
        from object: T,
        concurrencyControl: ConcurrencyControl
    ) async throws -> Bool {
        try reader.checkUsable(spec)
        let write = try ModelWrite(saving: object, blobs: reader.blobs)
        defer { reader.blobs.release(write.heldBlobs) }
        let reference = write.reference
        let operation = WriteOperation.save(
            spec, id: reference.id, body: write.body, base: reference.base,
            control: reference.control(concurrencyControl))
        return try await commit(operation, updating: reference.binding)
    }

    /// Saves a model object, calling `conflictHandler` when the stored document changed since the
    /// object was read or last saved.
    ///
    /// The handler gets the caller's own object first — edit it to merge, and the edits stay on
    /// your object — and the stored version decoded as `T` (nil when it was deleted). Returning
    /// `true` saves your (edited) object on top of the stored revision; returning `false` leaves
    /// the store and the object's binding unchanged, and the call returns `false`. If the stored
    /// document changes again while the handler runs, the handler runs again with the newer
    /// version, so no update is lost.
    ///
    /// ```swift
    /// let saved = try await tasks.save(from: task) { mine, stored in
    ///     mine.tags = Array(Set(mine.tags + (stored?.tags ?? [])))
    ///     return true
    /// }
    /// ```
    ///
    /// An object never read is compared against the revision current when the save commits, so
    /// the handler is not called for it.
    ///
    /// - Returns: `true` when the document was saved, `false` when the handler cancelled.
    /// - Throws: as ``save(from:)``; `DecodingError` when the stored version does not decode as
    ///   `T`; and whatever the handler throws (nothing is written then).
    @discardableResult
    nonisolated(nonsending) public func save<T: DocumentCodable>(
        from object: T,
        conflictHandler: (T, T?) throws -> Bool
    ) async throws -> Bool {
        try reader.checkUsable(spec)
        let write = try ModelWrite(saving: object, blobs: reader.blobs)
        var heldBlobs = write.heldBlobs
        defer { reader.blobs.release(heldBlobs) }
        let reference = write.reference
        return try await saveResolvingConflicts(
            id: reference.id, body: write.body, base: reference.base,
            control: reference.control(.failOnConflict),
            updating: reference.binding
        ) { stored in
            let storedObject = try stored.map { try DocumentDecoder.decodeModel(T.self, from: $0) }
            guard try conflictHandler(object, storedObject) else { return nil }
            let merged = try ModelWrite(saving: object, blobs: reader.blobs, newID: { _ in reference.id })
            heldBlobs += merged.heldBlobs
            guard merged.reference.id == reference.id else {
                throw CouchetteError(
                    .invalidParameter,
                    "the conflict handler changed the id of \(T.self) '\(reference.id)' to '\(merged.reference.id)'")
            }
            return merged.body
        }
    }

    // MARK: - Deleting and purging

    /// Deletes the document a model object stands for (writes a tombstone), last write wins.
    ///
    /// The object keeps its id and is bound to the tombstone: saving it again brings the
    /// document back.
    ///
    /// ```swift
    /// try await tasks.delete(for: task)
    /// ```
    ///
    /// - Throws: `.notFound` when the object has no id or the document does not exist;
    ///   `.invalidParameter` when the type has no `@DocumentID` or the id was changed after it was
    ///   read or saved; `.notOpen` after close.
    nonisolated(nonsending) public func delete<T: DocumentEncodable>(for object: T) async throws {
        try await delete(for: object, concurrencyControl: .lastWriteWins)
    }

    /// Deletes the document a model object stands for, with the given concurrency control.
    ///
    /// With `.failOnConflict`, returns `false` and deletes nothing when the stored document is no
    /// longer the revision the object was read at or last saved as. An object never read is
    /// compared against the revision current when the delete commits.
    ///
    /// ```swift
    /// let deleted = try await tasks.delete(for: task, concurrencyControl: .failOnConflict)
    /// ```
    ///
    /// - Returns: `true` when the document was deleted.
    /// - Throws: as ``delete(for:)``.
    @discardableResult
    nonisolated(nonsending) public func delete<T: DocumentEncodable>(
        for object: T,
        concurrencyControl: ConcurrencyControl
    ) async throws -> Bool {
        try reader.checkUsable(spec)
        let reference = try ModelReference(existing: object)
        let operation = WriteOperation.delete(
            spec, id: reference.id, base: reference.base,
            control: reference.control(concurrencyControl))
        return try await commit(operation, updating: reference.binding)
    }

    /// Removes every trace of the document a model object stands for (not replicated).
    ///
    /// The object keeps its id but is no longer bound to a revision: saving it again creates the
    /// document afresh.
    ///
    /// ```swift
    /// try await tasks.purge(for: task)
    /// ```
    ///
    /// - Throws: `.notFound` when the object has no id or no such document (or tombstone)
    ///   exists; `.invalidParameter` as for ``delete(for:)``; `.notOpen` after close.
    nonisolated(nonsending) public func purge<T: DocumentEncodable>(for object: T) async throws {
        try reader.checkUsable(spec)
        let reference = try ModelReference(existing: object)
        try await purge(id: reference.id)
        reference.wrapper.unbind()
    }
}
