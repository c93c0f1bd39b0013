import Synchronization

/// One write, in the `Sendable` form that crosses into the database actor. Bodies are already
/// encoded on the caller's side.
enum WriteOperation: Sendable {
    case save(CollectionSpec, id: String, body: [UInt8], base: String?, control: ConcurrencyControl)
    /// Saves of documents given as JSON, in one buffer (``Batch/save(id:json:in:concurrencyControl:)``).
    case saveJSON(JSONDocumentBatch)
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
        case .save, .saveJSON, .setExpiration, .graft, .resolveConflict, .putLocal: false
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
    /// A revision was written (or, for deleting a tombstone, already there), in the form its
    /// record stores it: a save formats no text its caller may never read.
    case saved(revision: StoredRevisionID, sequence: UInt64)
    /// The documents of a ``WriteOperation/saveJSON(_:)`` were written (new ones as told there).
    case savedDocuments(JSONDocumentBatch.Written)
    /// Concurrency control refused the write; nothing was written.
    case conflict
    case done

    /// A revision given as text was written (replicated, local and resolved revisions).
    static func saved(revisionID: String, sequence: UInt64) -> WriteOutcome { .saved(revision: .text(revisionID), sequence: sequence) }
}

/// Writes submitted together, waiting for a group commit (see ``WriteQueue``).
///
/// Every pending write gets its own nested transaction inside the group commit, so one that fails
/// leaves the others intact; an atomic one (a batch) fails whole on any error or conflict.
///
/// Its caller waits in ``completion()``, and the thread that committed it resumes the caller
/// directly (``finish()``) once the commit's observers have run: no job of the caller's runs on
/// the writer thread, so a group of eight concurrent saves wakes eight callers in one loop instead
/// of eight jobs taking turns on the writer.
///
/// The hand-over between committer and caller is one atomic state (``Stage``) rather than a lock:
/// a lock here cost every save two allocations (the lock's object and its mutex) and four
/// lock-unlock pairs.
///
/// A caller whose task is cancelled while it waits withdraws the write (``withdraw()``), unless a
/// committer has begun applying it (``claim()``): a second atomic state (``Claim``) decides which
/// of the two owns the write. Withdrawn, it is never applied and its caller gets
/// `CancellationError` at once — also while the committer waits for LMDB's write lock, which
/// another process may hold for as long as it likes. Claimed, it completes as usual.
final class PendingWrite: @unchecked Sendable {
    // @unchecked: the two `var`s are handed between threads only through `stage` and `claim`,
    // whose atomic operations order every access (ThreadSanitizer sees them):
    // - `result` is written only before ``finish()``, by whoever owns the write through `claim`:
    //   the committer that claimed it (or `close()`, which took it from the queue instead), or
    //   the caller's cancellation that withdrew it — one compare-exchange from ``Claim/open``
    //   decides, so they never both write it. The owner's releasing exchange of `stage` publishes
    //   it; it is read only after an acquiring load has seen ``Stage/finished``.
    // - `waiter` is written only by the caller in ``completion()``, before its releasing
    //   compare-exchange announces ``Stage/waiting``; it is read only by the owner's
    //   `resumeCaller()` (from ``finish()`` or ``withdraw()``, never both), after its acquiring
    //   exchange has seen that stage, and then cleared by it before the resume. On the lost race
    //   (the stage was `finished` already) the caller clears it again itself: no other thread
    //   looks at it then.
    // Every other stored property is a `let` of a Sendable type (`@unchecked` does not check
    // them: keep them so).
    let operations: [WriteOperation]
    let isAtomic: Bool
    /// The revision each save without a base gives a document that does not exist yet (generation
    /// 1, the MD5 of its body), computed where the write is made — on the caller's side — instead
    /// of on the writer thread, where concurrent savers queue behind every instruction of the
    /// commit. Empty when no operation is such a save; otherwise one entry per operation, nil for
    /// the others. The writer uses it only when the document turns out not to exist (the usual
    /// case for a save without a base); otherwise it derives the revision from the stored one.
    let newDocumentRevisions: [StoredRevisionID?]
    /// The revisions a batch's updates give the documents they were read from, computed while the
    /// batch was filled (see ``UpdateRevisions``); their saves have no base under
    /// `.lastWriteWins`, but are not new documents, so no ``newDocumentRevisions`` entry is made
    /// for them.
    let updateRevisions: UpdateRevisions?
    /// Where the hand-over stands (a ``Stage``'s raw value).
    private let stage = Atomic<UInt8>(Stage.pending.rawValue)
    /// Who owns the write (a ``Claim``'s raw value).
    private let owner = Atomic<UInt8>(Claim.open.rawValue)
    /// The outcome, recorded by ``complete(_:)`` before ``finish()``.
    private var result: Result<[WriteOutcome], any Error>?
    /// The caller's continuation while it waits in ``completion()``.
    private var waiter: UnsafeContinuation<Void, Never>?

    private enum Stage: UInt8 {
        /// Neither finished nor waited for.
        case pending
        /// The caller waits in ``completion()``: ``finish()`` resumes it.
        case waiting
        /// ``finish()`` ran: the result may be read.
        case finished
    }

    /// Who owns the write: the committer, once it begins applying it, or its cancelled caller.
    private enum Claim: UInt8 {
        /// Queued, or taken by a committer that has not begun applying it.
        case open
        /// A committer applies it (or failed it): it completes and finishes it.
        case claimed
        /// Its caller's task was cancelled first: it is never applied.
        case withdrawn
    }

    init(_ operations: [WriteOperation], isAtomic: Bool = false, updateRevisions: UpdateRevisions? = nil) {
        self.operations = operations
        self.isAtomic = isAtomic
        self.updateRevisions = updateRevisions
        newDocumentRevisions = Self.newDocumentRevisions(of: operations, except: updateRevisions)
    }

    /// ``newDocumentRevisions`` of `operations`, except the updates `updates` covers. A first
    /// revision cannot fail (only a generation past the highest does); were it to, the writer
    /// computes it and reports the error.
    private static func newDocumentRevisions(of operations: [WriteOperation], except updates: UpdateRevisions?) -> [StoredRevisionID?] {
        func isNew(_ index: Int) -> Bool {
            guard case .save(_, _, _, nil, _) = operations[index] else { return false }
            return !(updates?.covers(operation: index) ?? false)
        }
        guard operations.indices.contains(where: isNew) else { return [] }
        return operations.indices.map { index in
            guard isNew(index), case .save(_, _, let body, _, _) = operations[index] else { return nil }
            return try? RevisionID.makeStored(storedParent: nil, deleted: false, body: body)
        }
    }

    /// The revision operation `index` (a save) gives the document when the writer finds it at
    /// `parent` (nil: it does not exist), if computed in advance for that case; else nil.
    func precomputedRevision(at index: Int, replacing parent: StoredRevisionID?) -> StoredRevisionID? {
        guard let parent else { return index < newDocumentRevisions.count ? newDocumentRevisions[index] : nil }
        return updateRevisions?.revision(ofOperation: index, replacing: parent)
    }

    /// Takes the write for the committer, before it applies it: true unless its caller withdrew it
    /// (then it must not be applied). A committer may claim a write it claimed before (a group
    /// applied again).
    func claim() -> Bool {
        let (claimed, found) = owner.compareExchange(
            expected: Claim.open.rawValue, desired: Claim.claimed.rawValue, ordering: .acquiringAndReleasing)
        return claimed || found == Claim.claimed.rawValue
    }

    /// Withdraws the write for its cancelled caller, unless a committer has claimed it: then it is
    /// failed with `CancellationError` and its caller resumed now, and no committer applies it.
    /// Returns whether it was withdrawn.
    @discardableResult
    func withdraw() -> Bool {
        let (withdrawn, _) = owner.compareExchange(
            expected: Claim.open.rawValue, desired: Claim.withdrawn.rawValue, ordering: .acquiringAndReleasing)
        guard withdrawn else { return false }
        result = .failure(CancellationError())
        resumeCaller()
        return true
    }

    /// Records the write's outcome; its caller learns it at ``finish()``. Called by the thread
    /// that finishes the write, before it does; nothing when the caller withdrew the write.
    func complete(_ outcome: Result<[WriteOutcome], any Error>) {
        guard claim() else { return }
        result = outcome
    }

    /// Resumes the caller waiting in ``completion()`` (or lets it return at once when it gets
    /// there). Called once the outcome is recorded and the commit's observers have run, so that
    /// when a save returns, its change is in every change feed's buffer. Nothing when the
    /// caller withdrew the write (its withdrawal resumed it).
    func finish() {
        guard owner.load(ordering: .acquiring) == Claim.claimed.rawValue else { return }
        resumeCaller()
    }

    /// Marks the write finished and resumes its caller if it waits.
    private func resumeCaller() {
        let before = stage.exchange(Stage.finished.rawValue, ordering: .acquiringAndReleasing)
        if before == Stage.waiting.rawValue, let waiter {
            self.waiter = nil
            waiter.resume()
        }
    }

    /// Fails the write and resumes its caller.
    func fail(_ error: any Error) {
        complete(.failure(error))
        finish()
    }

    /// Whether it is finished with an outcome: completed by a commit (with its outcomes or an
    /// error), or withdrawn (failed with `CancellationError`).
    var isCompleted: Bool { stage.load(ordering: .acquiring) == Stage.finished.rawValue && result != nil }

    /// Whether its cancelled caller withdrew it: a committer leaves it out.
    var isWithdrawn: Bool { owner.load(ordering: .acquiring) == Claim.withdrawn.rawValue }

    /// Suspends until ``finish()``; returns at once if it has been called. The caller must have
    /// queued the write first (``WriteQueue/append(_:mayCommitHere:)``). Called at most once.
    ///
    /// Cancelling the caller's task withdraws the write unless a committer has begun applying it
    /// (``withdraw()``): it then returns at once, and ``outcomes()`` throws `CancellationError`.
    nonisolated(nonsending) func completion() async {
        guard stage.load(ordering: .acquiring) != Stage.finished.rawValue else { return }
        await withTaskCancellationHandler {
            await waitForFinish()
        } onCancel: {
            withdraw()
        }
    }

    /// Suspends until the write is finished (by its committer or its withdrawal).
    nonisolated(nonsending) private func waitForFinish() async {
        guard stage.load(ordering: .acquiring) != Stage.finished.rawValue else { return }
        await withUnsafeContinuation { (continuation: UnsafeContinuation<Void, Never>) in
            waiter = continuation
            let (announced, found) = stage.compareExchange(
                expected: Stage.pending.rawValue, desired: Stage.waiting.rawValue, ordering: .acquiringAndReleasing)
            if !announced {
                // A second wait (`waiting`) would have overwritten the first waiter, which would never
                // be resumed: a hang, so stop here instead.
                precondition(found == Stage.finished.rawValue, "a write's completion was awaited twice")
                // Finished meanwhile: `finish()` never saw the waiter, which stays ours.
                waiter = nil
                continuation.resume()
            }
        }
    }

    /// The outcome; throws the write's error. Only valid once a commit has completed it.
    func outcomes() throws -> [WriteOutcome] {
        guard stage.load(ordering: .acquiring) == Stage.finished.rawValue, let outcome = result else {
            throw CouchetteError(.io, "write was not committed")
        }
        return try outcome.get()
    }
}

/// Which documents of which collections one commit changed: the seam that change feeds, live
/// queries and replication build on.
///
/// Building it costs nothing per document when nobody observes commits: the writer then collects
/// no ids (``WriteContext/recordsIDs``), and what the cross-process monitor needs
/// (``ownWrites``) is one sequence range and one count change per collection. Ids are collected
/// without hashing: a document written twice in one commit is recognised by its previous
/// sequence (see ``WriteContext/recordChange(_:_:replacing:)``).
struct CommitSummary: Sendable, Equatable {
    /// The changed documents of each collection, in the order they were first written; an empty
    /// list marks a collection changed without known ids.
    private(set) var documentIDs: [CollectionSpec: [String]] = [:]
    /// Whether a document may appear twice in a list: purged, then written again in the same
    /// commit (its second write has no previous record to tell). ``deduplicate()`` settles it.
    private var mayRepeat = false

    /// The sequences this commit assigned, and how it changed each collection's live count: what
    /// lets the cross-process monitor tell this process's commits from other processes' ones.
    private(set) var ownWrites = OwnWrites()

    var isEmpty: Bool { documentIDs.isEmpty }

    /// Adds `id`, which the caller knows is not listed yet.
    mutating func record(_ collection: CollectionSpec, _ id: String) {
        documentIDs[collection, default: []].append(id)
    }

    /// Adds the id of a purged document unless it is listed already; a later write of it in the
    /// same commit will not know it is listed.
    mutating func recordPurge(_ collection: CollectionSpec, _ id: String, listed: Bool) {
        if !listed { record(collection, id) }
        mayRepeat = true
    }

    /// Collections in which documents beyond the listed ones changed (purged by another process,
    /// which leaves no id to report): readers that follow the listed ids alone must re-read the
    /// whole collection.
    private(set) var unnamedChanges: Set<CollectionSpec> = []

    /// Marks `collection` as changed in documents it does not name (purges made by another
    /// process): live queries re-run whole, collection feeds report only the named ids, if any.
    mutating func touch(_ collection: CollectionSpec) {
        if documentIDs[collection] == nil { documentIDs[collection] = [] }
        unnamedChanges.insert(collection)
    }

    /// Whether `collection` changed beyond the ids it lists (see ``touch(_:)``).
    func hasUnnamedChanges(_ collection: CollectionSpec) -> Bool {
        unnamedChanges.contains(collection)
    }

    mutating func recordSequences(_ collection: UInt32, _ sequences: ClosedRange<UInt64>) {
        ownWrites.record(collection, sequences)
    }

    mutating func recordCountChange(_ collection: UInt32, by delta: Int64) {
        ownWrites.recordCountChange(collection, by: delta)
    }

    mutating func recordPurges(_ collection: UInt32, _ count: UInt64) {
        ownWrites.recordPurges(collection, count)
    }

    /// Appends what a later part of the same commit changed (its ids are new unless it purged).
    mutating func merge(_ other: CommitSummary) {
        if documentIDs.isEmpty {
            documentIDs = other.documentIDs
        } else {
            for (collection, ids) in other.documentIDs { documentIDs[collection, default: []] += ids }
        }
        mayRepeat = mayRepeat || other.mayRepeat
        unnamedChanges.formUnion(other.unnamedChanges)
        ownWrites.merge(other.ownWrites)
    }

    /// Removes repeated ids, keeping first positions; hashes only after a purge in the commit.
    mutating func deduplicate() {
        guard mayRepeat else { return }
        mayRepeat = false
        for (collection, ids) in documentIDs where ids.count > 1 {
            var seen = Set<String>()
            documentIDs[collection] = ids.filter { seen.insert($0).inserted }
        }
    }

    static func == (lhs: CommitSummary, rhs: CommitSummary) -> Bool {
        lhs.documentIDs == rhs.documentIDs && lhs.unnamedChanges == rhs.unnamedChanges
    }
}

/// What one or more of this process's commits wrote, as far as the cross-process monitor cares:
/// per collection, the ranges of sequences assigned (one per commit: a commit's sequences in one
/// collection are consecutive), the change of the live count, and how many documents were purged
/// (the purge counters' increase: see ``StoreLayout/purgeCountKey(_:)``).
///
/// Every commit makes one, on the writer, and hands it to the monitor: it is a short list, one
/// entry per collection with its first range inline — a single allocation for a commit to one
/// collection, where three dictionaries and a list cost four, and their hashing.
struct OwnWrites: Sendable {
    private var entries: [Entry] = []

    private struct Entry: Sendable {
        let collection: UInt32
        /// The first range of sequences, then the others (``record(_:_:)`` merges adjacent ones).
        var firstRange: ClosedRange<UInt64>?
        var moreRanges: [ClosedRange<UInt64>] = []
        var countDelta: Int64 = 0
        var purges: UInt64 = 0

        init(collection: UInt32) { self.collection = collection }

        var ranges: [ClosedRange<UInt64>] { (firstRange.map { [$0] } ?? []) + moreRanges }
    }

    /// The sequences assigned, by collection (collections without any are left out).
    var sequences: [UInt32: [ClosedRange<UInt64>]] {
        Dictionary(uniqueKeysWithValues: entries.filter { $0.firstRange != nil }.map { ($0.collection, $0.ranges) })
    }

    /// How each collection's live count changed (unchanged ones are left out).
    var countDeltas: [UInt32: Int64] {
        Dictionary(uniqueKeysWithValues: entries.filter { $0.countDelta != 0 }.map { ($0.collection, $0.countDelta) })
    }

    /// How many documents each collection had purged (collections without purges are left out).
    var purges: [UInt32: UInt64] {
        Dictionary(uniqueKeysWithValues: entries.filter { $0.purges != 0 }.map { ($0.collection, $0.purges) })
    }

    mutating func record(_ collection: UInt32, _ range: ClosedRange<UInt64>) {
        let index = entryIndex(collection)
        guard let first = entries[index].firstRange else {
            entries[index].firstRange = range
            return
        }
        if entries[index].moreRanges.isEmpty, first.upperBound &+ 1 == range.lowerBound {
            entries[index].firstRange = first.lowerBound...range.upperBound
        } else if entries[index].moreRanges.isEmpty {
            entries[index].moreRanges.append(range)
        } else {
            entries[index].moreRanges.appendOrExtend(range)
        }
    }

    mutating func recordCountChange(_ collection: UInt32, by delta: Int64) {
        entries[entryIndex(collection)].countDelta += delta
    }

    mutating func recordPurges(_ collection: UInt32, _ count: UInt64) {
        entries[entryIndex(collection)].purges &+= count
    }

    /// Whether `sequence` of `collection` was assigned by one of these commits.
    func contains(_ collection: UInt32, _ sequence: UInt64) -> Bool {
        guard let entry = entries.first(where: { $0.collection == collection }) else { return false }
        return entry.firstRange?.contains(sequence) == true || entry.moreRanges.contains { $0.contains(sequence) }
    }

    mutating func merge(_ other: OwnWrites) {
        for entry in other.entries {
            for range in entry.ranges { record(entry.collection, range) }
            if entry.countDelta != 0 { recordCountChange(entry.collection, by: entry.countDelta) }
            if entry.purges != 0 { recordPurges(entry.collection, entry.purges) }
        }
    }

    /// The entry of `collection`, added when missing.
    private mutating func entryIndex(_ collection: UInt32) -> Int {
        if let index = entries.firstIndex(where: { $0.collection == collection }) { return index }
        entries.append(Entry(collection: collection))
        return entries.count - 1
    }
}

extension [ClosedRange<UInt64>] {
    /// Appends `range`, or extends the last range when `range` continues it.
    fileprivate mutating func appendOrExtend(_ range: ClosedRange<UInt64>) {
        if let last, last.upperBound &+ 1 == range.lowerBound {
            self[count - 1] = last.lowerBound...range.upperBound
        } else {
            append(range)
        }
    }
}
