/// The writes of one ``Database/inBatch(_:)`` call, collected on the caller's side.
///
/// Valid only inside the batch body; using it afterwards throws `.invalidParameter`. Documents
/// are encoded when you call a method, so later edits to a `MutableDocument` are not included.
public final class Batch {
    let database: Database
    private(set) var operations: [WriteOperation] = []
    /// The mutable documents to update with their new revisions, by operation index.
    private var documents: [Int: MutableDocument] = [:]
    private var isClosed = false

    init(database: Database) { self.database = database }

    public func save(document: MutableDocument, in collection: Collection,
                     concurrencyControl: ConcurrencyControl = .lastWriteWins) throws {
        try check(collection)
        let body = try document.encodeBody()
        documents[operations.count] = document
        operations.append(.save(collection.spec, id: document.id, body: body, base: document.revisionID,
                                control: concurrencyControl))
    }

    public func delete(document: Document, in collection: Collection,
                       concurrencyControl: ConcurrencyControl = .lastWriteWins) throws {
        try check(collection)
        operations.append(.delete(collection.spec, id: document.id, base: document.revisionID, control: concurrencyControl))
    }

    public func purge(id: String, in collection: Collection) throws {
        try check(collection)
        operations.append(.purge(collection.spec, id: id))
    }

    private func check(_ collection: Collection) throws {
        guard !isClosed else {
            throw CouchetteError(.invalidParameter, "a Batch can only be used inside its inBatch body")
        }
        guard collection.database === database else {
            throw CouchetteError(.invalidParameter, "collection \(collection.fullName) belongs to another database")
        }
        try collection.core.checkUsable(collection.spec)
    }

    func close() { isClosed = true }

    /// Gives saved documents their new revisions after the commit.
    func apply(_ outcomes: [WriteOutcome]) {
        for (index, document) in documents {
            guard index < outcomes.count, case .saved(let revisionID, let sequence) = outcomes[index] else { continue }
            document.revisionID = revisionID
            document.sequence = sequence
        }
    }
}
