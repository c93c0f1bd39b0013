/// One collection on one side of a replication, in CouchDB protocol terms.
///
/// The replication engine (``Replicator``) only talks to peers: ``LocalPeer`` over a collection
/// of an open database (used for the local side and for ``DatabaseEndpoint``), and the HTTP
/// client peer for ``URLEndpoint``. The listener serves a ``LocalPeer`` over HTTP. Sequences are
/// opaque to the other side: store them and send them back verbatim.
protocol ReplicationPeer: Sendable {
    /// Stable id of this peer for replication ids and logs (never contains credentials).
    var identifier: String { get }
    func info() async throws -> PeerInfo
    /// The documents changed after `since` (nil: from the start), with every leaf revision
    /// (`style=all_docs`). With `.longpoll` and nothing to report yet, waits for a change or the
    /// timeout (then returns no results). With a `selector`, only documents whose current
    /// revision it matches (CouchDB's `filter=_selector`); `limit` counts matching rows.
    func changes(since: Value?, limit: Int, documentIDs: [String]?, selector: MangoSelector?, wait: ChangesWait) async throws -> PeerChanges
    /// For each document id, the given revisions this peer lacks (documents lacking none are
    /// left out).
    func revsDiff(_ revisions: [String: [String]]) async throws -> [String: RevsDiffResult]
    /// The requested revisions; a `latest` request may yield several (one per descending leaf).
    func bulkGet(_ requests: [RevisionRequest]) async throws -> [RevisionFetch]
    /// new_edits=false: graft each revision with its history; returns per-document errors only.
    func bulkDocs(_ revisions: [PeerRevision]) async throws -> [DocumentWriteError]
    /// `_local/{id}`; nil when missing.
    func localDocument(id: String) async throws -> Value?
    func putLocalDocument(id: String, _ body: Value) async throws
    func ensureFullCommit() async throws
    /// Ends long-lived connections (a continuous `_changes` feed) when a worker stops reading;
    /// the peer stays usable and reconnects on the next call.
    func closeStreams()
    /// Waits before a failed replication tries again: `wait` (the backoff), or less when the
    /// peer can tell it is worth trying sooner (a server that was unreachable answers again).
    func awaitRetry(within wait: Duration) async throws
}

extension ReplicationPeer {
    func closeStreams() {}

    func awaitRetry(within wait: Duration) async throws {
        try await Task.sleep(for: wait)
    }

    func changes(since: Value?, limit: Int, documentIDs: [String]?, wait: ChangesWait) async throws -> PeerChanges {
        try await changes(since: since, limit: limit, documentIDs: documentIDs, selector: nil, wait: wait)
    }
}

struct PeerInfo: Sendable {
    var name: String
    var updateSequence: Value
}

enum ChangesWait: Sendable {
    case normal
    case longpoll(timeout: Duration)
}

struct PeerChanges: Sendable {
    var results: [PeerChange]
    var lastSequence: Value
}

/// One `_changes` row with `style=all_docs`.
struct PeerChange: Sendable {
    var sequence: Value
    var id: String
    var leafRevisions: [String]
    var deleted: Bool
}

struct RevsDiffResult: Sendable {
    var missing: [String]
    var possibleAncestors: [String]
}

struct RevisionRequest: Sendable {
    var id: String
    var revisionID: String
    /// Revisions the receiver already has (`atts_since`): the history sent back may stop there.
    var knownAncestors: [String]
    /// CouchDB's `latest=true`: when `revisionID` is no longer a leaf (superseded between
    /// `_changes` and the fetch), send the leaves that descend from it instead.
    var latest = false
}

enum RevisionFetch: Sendable {
    case found(PeerRevision)
    case failed(id: String, revisionID: String, error: CouchetteError)
}

/// A revision as it travels: body without `_` fields; history = [revisionID] + ancestors newest first.
struct PeerRevision: Sendable {
    var id: String
    var revisionID: String
    var deleted: Bool
    var body: Value
    var history: [String]
    /// Content of the blobs and attachments the body references that travels with it, by digest
    /// (the others go as stubs: the receiver already has them, as `atts_since` told).
    var attachments: [String: AttachmentContent] = [:]
}

struct DocumentWriteError: Sendable {
    var id: String
    var revisionID: String?
    var error: CouchetteError
}
