/// The document a model object stands for, on the caller's side: its `@DocumentID` wrapper, the id
/// to write and the revision to compare against.
struct ModelReference {
    let wrapper: DocumentID
    let id: String
    /// The revision the object was read at or last saved as; nil when it is not bound to one.
    let base: String?

    /// The reference of a model that must already have an id (delete, purge).
    ///
    /// - Throws: `.invalidParameter` when the type has no `@DocumentID` or the id was changed after
    ///   binding; `.notFound` when the object has no id (it was never saved).
    init<T: AnyObject>(existing model: T, pendingID: (DocumentID) -> String? = { _ in nil }) throws {
        let wrapper = try DocumentIDLocator.wrapper(in: model)
        let target = try wrapper.writeTarget(modelType: T.self)
        guard let id = target.id ?? pendingID(wrapper) else {
            throw CouchetteError(.notFound, "this \(T.self) has no document id: it was never saved")
        }
        self.init(wrapper: wrapper, id: id, base: target.base)
    }

    init(wrapper: DocumentID, id: String, base: String?) {
        self.wrapper = wrapper
        self.id = id
        self.base = base
    }

    /// The concurrency control a write of this object uses. An object bound to a revision uses
    /// `requested`; one that is not (never read, decoded from a query result, or purged) is
    /// compared against the revision current when the write commits — it adopts that revision, so
    /// it cannot conflict.
    func control(_ requested: ConcurrencyControl) -> ConcurrencyControl {
        base == nil ? .lastWriteWins : requested
    }

    /// Updates the object once its write has committed (assigning a generated id).
    var binding: ModelBinding { ModelBinding(wrapper: wrapper, id: id) }
}

/// Binds a model's `@DocumentID` to the revision its write produced.
struct ModelBinding: RevisionTracking {
    let wrapper: DocumentID
    let id: String

    func didCommit(revisionID: String, sequence: UInt64) {
        wrapper.bind(id: id, revisionID: revisionID)
    }

    func didCommit(revision: StoredRevisionID, sequence: UInt64) {
        wrapper.bind(id: id, revision: revision)
    }
}

/// A model encoded for a save on the caller's side: only ``body`` (Sendable bytes) crosses into
/// the database actor.
struct ModelWrite {
    let reference: ModelReference
    let body: [UInt8]
    /// Digests of the model's blobs, stored in `blobs` and held until the caller releases them
    /// after the commit.
    let heldBlobs: [String]

    /// Encodes `model`, finds its `@DocumentID`, and picks the id to save under: the model's own,
    /// else `newID(wrapper)` (a generated id, assigned to the object only after the commit).
    ///
    /// - Throws: `.invalidParameter` when a value cannot be stored (naming the type and key path),
    ///   the type has no `@DocumentID`, or the id was changed after binding.
    init<T: Encodable & AnyObject>(
        saving model: T, blobs: BlobStore? = nil,
        newID: (DocumentID) -> String = { _ in DocumentIDGenerator.make() }
    ) throws {
        let output: DocumentEncoder.Output
        do {
            // The base revision matters only for new blobs' `revpos`; finding it takes reflection,
            // which would cost more than the encoding itself, so it waits for the first blob.
            output = try DocumentEncoder.encode(model, blobs: blobs) {
                let base = DocumentIDLocator.wrappers(in: model).first?.binding?.revisionID
                return base.flatMap(RevisionID.generation(of:)).map { Int64($0) + 1 } ?? 1
            }
        } catch let error as CouchetteError {
            let id = DocumentIDLocator.wrappers(in: model).first?.wrappedValue
            throw CouchetteError(error.code, "cannot save \(T.self)\(id.map { " '\($0)'" } ?? ""): \(error.message)")
        }
        do {
            let wrapper: DocumentID
            switch (output.documentID, output.otherDocumentIDs.count) {
            case (let only?, 0): wrapper = only
            case (nil, _): wrapper = try DocumentIDLocator.wrapper(in: model)  // encode(to:) written by hand
            case (_?, let others): throw DocumentIDLocator.tooMany(1 + others, in: T.self)
            }
            let target = try wrapper.writeTarget(modelType: T.self)
            reference = ModelReference(wrapper: wrapper, id: target.id ?? newID(wrapper), base: target.base)
        } catch {
            blobs?.release(output.heldBlobs)
            throw error
        }
        self.body = output.body
        self.heldBlobs = output.heldBlobs
    }
}

/// Finds a model's `@DocumentID` by reflection, for models whose `encode(to:)` or `init(from:)`
/// do not pass the wrapper through the coder, and for deletes and purges (which encode nothing).
enum DocumentIDLocator {
    /// The model's one `@DocumentID` (declared in its class or a superclass).
    ///
    /// - Throws: `.invalidParameter` when there is none, or more than one.
    static func wrapper(in model: AnyObject) throws -> DocumentID {
        let found = wrappers(in: model)
        guard found.count == 1 else {
            if found.isEmpty {
                throw CouchetteError(
                    .invalidParameter,
                    "\(type(of: model)) has no @DocumentID property: a document model needs one, such as `@DocumentID var id: String?`")
            }
            throw tooMany(found.count, in: type(of: model))
        }
        return found[0]
    }

    static func wrappers(in model: AnyObject) -> [DocumentID] {
        var found: [DocumentID] = []
        var mirror: Mirror? = Mirror(reflecting: model)
        while let current = mirror {
            for child in current.children {
                if let wrapper = child.value as? DocumentID, !found.contains(where: { $0 === wrapper }) {
                    found.append(wrapper)
                }
            }
            mirror = current.superclassMirror
        }
        return found
    }

    static func tooMany(_ count: Int, in type: Any.Type) -> CouchetteError {
        CouchetteError(.invalidParameter, "\(type) has \(count) @DocumentID properties; a document model has exactly one")
    }
}
