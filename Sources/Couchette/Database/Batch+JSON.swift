extension Batch {
    /// Adds the save of a document given as JSON text: the bulk-loading path, for importing many
    /// documents at once.
    ///
    /// The same as saving `MutableDocument(id: id, json: json)` with ``save(document:in:concurrencyControl:)``
    /// — the same stored body, the same revision ids — but without a `MutableDocument` per
    /// document: the text is transcoded into the stored binary format now, next to the documents
    /// saved before it, and the writer copies each body straight into its record. Use it when the
    /// JSON comes from a file, a network response or another store.
    ///
    /// ```swift
    /// let lines = try String(contentsOfFile: "people.jsonl", encoding: .utf8).split(separator: "\n")
    /// try await db.inBatch { batch in
    ///     for (number, line) in lines.enumerated() {
    ///         try batch.save(id: "person-\(number)", json: String(line), in: people)
    ///     }
    /// }
    /// ```
    ///
    /// - A document that already exists gets a new revision of its current one (its whole body
    ///   replaced), as a `MutableDocument` saved without reading it would: with `.lastWriteWins`
    ///   it is overwritten; with `.failOnConflict` an existing live document fails the whole batch
    ///   with `.conflict` (a deleted one is replaced, as a new document may replace a tombstone).
    /// - Bad input throws `.invalidParameter` from this call, naming the document and the byte
    ///   where the JSON went wrong; nothing of that document is kept in the batch. Letting the
    ///   error leave the batch body writes nothing at all (a batch is all or none); catching it
    ///   skips that document, and the batch still commits the others.
    ///
    /// - Parameters:
    ///   - id: The document id (1 to 480 UTF-8 bytes); nil generates one, as `MutableDocument(id: nil)` does.
    ///   - json: A JSON object: the whole body. Nesting is limited to 512 levels.
    ///   - collection: The collection the document is saved in.
    ///   - concurrencyControl: What happens when the document already exists: `.lastWriteWins`
    ///     (the default) replaces it; `.failOnConflict` fails the batch if it is live.
    /// - Returns: The document's id (the generated one when `id` is nil).
    /// - Throws: `.invalidParameter` for a bad id, text that is not a JSON object, or a batch
    ///   used after its body returned; `.notOpen` for a closed database or deleted collection.
    @discardableResult
    public func save(
        id: String?, json: String, in collection: Collection, concurrencyControl: ConcurrencyControl = .lastWriteWins
    ) throws -> String {
        try startJSONDocuments(in: collection, concurrencyControl)
        let id = id ?? DocumentIDGenerator.make()
        try DocumentStore.validate(id: id)
        try jsonDocuments?.append(id: id, json: json)
        startNextBufferIfFull()
        return id
    }

    /// Ends the current run of JSON documents when its buffer is full: the next save starts a
    /// new one, with room for a full buffer from the start.
    func startNextBufferIfFull() {
        guard jsonDocuments?.isFull == true, let documents = jsonDocuments else { return }
        let collection = jsonCollection
        finishJSONDocuments()
        jsonCollection = collection
        jsonDocuments = JSONDocumentBatch.Builder(
            collection: documents.collection, control: documents.control, capacity: JSONDocumentBatch.Builder.bufferLimit + (1 << 16))
    }

    /// ``save(id:json:in:concurrencyControl:)`` for `couchette import`: the id is the first
    /// top-level property among `idKeys` that is present (a non-empty string, or an integer in
    /// decimal; else a generated id), and that property and those named in `removedKeys` are left
    /// out of the body. Returns the id.
    @_spi(Tools)
    @discardableResult
    public func save(json: String, idKeys: [String], removing removedKeys: [String], in collection: Collection) throws -> String {
        try startJSONDocuments(in: collection, .lastWriteWins)
        guard let id = try jsonDocuments?.append(json: json, idKeys: idKeys, removing: removedKeys) else {
            throw CouchetteError(.invalidParameter, "a Batch can only be used inside its inBatch body")
        }
        startNextBufferIfFull()
        return id
    }

    /// Makes ``jsonDocuments`` collect saves into `collection` under `control`. A run of saves
    /// into one collection checks it once (the commit checks it again).
    func startJSONDocuments(in collection: Collection, _ control: ConcurrencyControl) throws {
        try checkOpen()
        guard jsonCollection !== collection || jsonDocuments?.control != control else { return }
        try check(collection)
        finishJSONDocuments()
        jsonDocuments = JSONDocumentBatch.Builder(collection: collection.spec, control: control)
        jsonCollection = collection
    }
}
