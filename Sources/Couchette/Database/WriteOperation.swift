/// One write, in the `Sendable` form that crosses into the database actor. Bodies are already
/// encoded on the caller's side.
enum WriteOperation: Sendable {
    case save(CollectionSpec, id: String, body: [UInt8], base: String?, control: ConcurrencyControl)
    case delete(CollectionSpec, id: String, base: String?, control: ConcurrencyControl)
    case purge(CollectionSpec, id: String)
    /// 0 milliseconds removes the expiration.
    case setExpiration(CollectionSpec, id: String, milliseconds: UInt64)
    case purgeExpired(now: UInt64)
    /// A revision received by replication, grafted with its history (CouchDB `new_edits=false`).
    case graft(CollectionSpec, GraftedRevision)
    /// Closes a document's conflicting branches (see ``ConflictResolution``).
    case resolveConflict(CollectionSpec, ConflictResolution)
    /// Writes (nil body: removes) a `_local` document: not replicated, no sequence. The body is
    /// encoded in the transaction, which adds its new `_rev` (see ``LocalRevisionCondition``).
    case putLocal(CollectionSpec, id: String, body: Value?, condition: LocalRevisionCondition)

    /// Whether the operation removes more than it adds: such writes may use the room kept for
    /// them under ``DatabaseConfiguration/maximumSize``.
    var freesSpace: Bool {
        switch self {
        case .delete, .purge, .purgeExpired: true
        case .save, .setExpiration, .graft, .resolveConflict, .putLocal: false
        }
    }
}

/// A revision as replication delivers it: body already encoded, history newest first starting
/// with `revisionID`.
struct GraftedRevision: Sendable {
    var id: String
    var revisionID: String
    var isDeleted: Bool
    var body: [UInt8]
    var history: [String]
}

/// How to end a conflict: every live leaf except `keep` gets a tombstone child; `keep` gets a
/// child with `body` when one is given. A nil `keep` deletes every live branch. Refused with
/// `.conflict` when the document's live leaves are no longer exactly `liveLeaves`.
struct ConflictResolution: Sendable {
    var id: String
    var liveLeaves: Set<String>
    var keep: String?
    var body: [UInt8]?
}

/// What one ``WriteOperation`` did.
enum WriteOutcome: Sendable, Equatable {
    /// A revision was written (or, for deleting a tombstone, already there).
    case saved(revisionID: String, sequence: UInt64)
    /// Concurrency control refused the write; nothing was written.
    case conflict
    case done
}

/// Writes submitted together, waiting for the database actor to commit them.
///
/// Every pending write gets its own nested transaction inside the group commit, so one that fails
/// leaves the others intact; an atomic one (a batch) fails whole on any error or conflict.
final class PendingWrite: Sendable {
    let operations: [WriteOperation]
    let isAtomic: Bool
    private let result = Locked<Result<[WriteOutcome], any Error>?>(nil)

    init(_ operations: [WriteOperation], isAtomic: Bool = false) {
        self.operations = operations
        self.isAtomic = isAtomic
    }

    func complete(_ outcome: Result<[WriteOutcome], any Error>) {
        result.withLock { $0 = outcome }
    }

    /// The outcome; throws the write's error. Only valid once a drain has completed it.
    func outcomes() throws -> [WriteOutcome] {
        guard let outcome = result.withLock({ $0 }) else {
            throw CouchetteError(.io, "write was not committed")
        }
        return try outcome.get()
    }
}

/// Which documents of which collections one commit changed: the seam that change feeds, live
/// queries and replication build on.
struct CommitSummary: Sendable, Equatable {
    private(set) var documentIDs: [CollectionSpec: [String]] = [:]
    private var seen: Set<Key> = []

    private struct Key: Hashable {
        let collection: UInt32
        let id: String
    }

    /// The sequences this commit assigned, and how it changed each collection's live count: what
    /// lets the cross-process monitor tell this process's commits from other processes' ones.
    private(set) var ownWrites = OwnWrites()

    var isEmpty: Bool { documentIDs.isEmpty }

    mutating func record(_ collection: CollectionSpec, _ id: String) {
        if seen.insert(Key(collection: collection.number, id: id)).inserted {
            documentIDs[collection, default: []].append(id)
        }
    }

    /// Marks `collection` as changed without naming documents (a purge made by another process:
    /// live queries re-run, collection feeds have no id to report).
    mutating func touch(_ collection: CollectionSpec) {
        if documentIDs[collection] == nil { documentIDs[collection] = [] }
    }

    mutating func recordSequence(_ collection: UInt32, _ sequence: UInt64) {
        ownWrites.sequences.insert(SequenceKey(collection: collection, sequence: sequence))
    }

    mutating func recordCountChange(_ collection: UInt32, by delta: Int64) {
        ownWrites.countDeltas[collection, default: 0] += delta
    }

    mutating func merge(_ other: CommitSummary) {
        for (collection, ids) in other.documentIDs {
            if ids.isEmpty { touch(collection) }
            for id in ids { record(collection, id) }
        }
        ownWrites.merge(other.ownWrites)
    }

    static func == (lhs: CommitSummary, rhs: CommitSummary) -> Bool { lhs.documentIDs == rhs.documentIDs }
}

/// One entry of the `sequences` table: a collection number and a sequence.
struct SequenceKey: Hashable, Sendable {
    let collection: UInt32
    let sequence: UInt64
}

/// What one or more of this process's commits wrote, as far as the cross-process monitor cares.
struct OwnWrites: Sendable {
    var sequences: Set<SequenceKey> = []
    var countDeltas: [UInt32: Int64] = [:]

    mutating func merge(_ other: OwnWrites) {
        sequences.formUnion(other.sequences)
        for (collection, delta) in other.countDeltas { countDeltas[collection, default: 0] += delta }
    }
}
