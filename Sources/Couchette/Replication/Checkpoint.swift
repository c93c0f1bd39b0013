import Foundation

/// Replication checkpoints in CouchDB's format: a `_local/{replication id}` document written on
/// both sides after each batch, so a restarted replication resumes where it stopped.
///
/// ```json
/// {"session_id": "…", "source_last_seq": 42, "replication_id_version": 3,
///  "history": [{"session_id": "…", "start_time": "…", "end_time": "…", "start_last_seq": 0,
///               "end_last_seq": 42, "recorded_seq": 42, "missing_checked": 42, "missing_found": 42,
///               "docs_read": 42, "docs_written": 42, "doc_write_failures": 0}]}
/// ```
///
/// The replication id is an MD5 (hex) of what makes two replications the same: this database's
/// UUID, the collection, the other peer's identifier (never credentials), the direction, and the
/// document-id filter and whether a filter function is set.
struct Checkpoint {
    static let historyLimit = 50

    static func replicationID(
        localUUID: String, collection: String, remote: String, isPush: Bool,
        documentIDs: [String]?, hasFilter: Bool, selector: Value? = nil
    ) -> String {
        var parts = [localUUID, collection, remote, isPush ? "push" : "pull"]
        parts.append(documentIDs.map { "doc_ids:" + $0.sorted().joined(separator: ",") } ?? "")
        parts.append(hasFilter ? "filter" : "")
        if let selector { parts.append("selector:" + JSON.string(from: selector)) }  // a new selector starts over
        return RevisionID.hex(RevisionID.md5(Array(parts.joined(separator: "\n").utf8)))
    }

    /// The source sequence both sides agree was reached, or nil to start from the beginning:
    /// the same session id on both sides gives `source_last_seq`; otherwise the newest session
    /// both histories share gives its `recorded_seq`.
    static func resumeSequence(source: Value?, target: Value?) -> Value? {
        guard let source, let target else { return nil }
        if let session = source["session_id"], session == target["session_id"] {
            return source["source_last_seq"]
        }
        guard case .array(let sourceHistory)? = source["history"], case .array(let targetHistory)? = target["history"] else {
            return nil
        }
        let targetSessions = Set(
            targetHistory.compactMap { entry -> String? in
                if case .string(let id)? = entry["session_id"] { return id }
                return nil
            })
        for entry in sourceHistory {
            if case .string(let id)? = entry["session_id"], targetSessions.contains(id) {
                return entry["recorded_seq"]
            }
        }
        return nil
    }

    /// The statistics of one replication session, for the checkpoint's history entry.
    struct Session: Sendable {
        let sessionID = RevisionID.hex((0..<16).map { _ in UInt8.random(in: 0...255) })
        let startTime = Date()
        let startSequence: Value?
        var missingChecked = 0
        var missingFound = 0
        var documentsRead = 0
        var documentsWritten = 0
        var writeFailures = 0
    }

    /// The checkpoint document recording `sequence` for `session`, keeping the previous history.
    static func document(previous: Value?, session: Session, sequence: Value) -> Value {
        var history: [Value] = []
        if case .array(let entries)? = previous?["history"] {
            history = entries.filter { $0["session_id"] != .string(session.sessionID) }
        }
        let entry: Value = .dictionary([
            "session_id": .string(session.sessionID),
            "start_time": .string(httpDate(session.startTime)),
            "end_time": .string(httpDate(Date())),
            "start_last_seq": session.startSequence ?? .int(0),
            "end_last_seq": sequence,
            "recorded_seq": sequence,
            "missing_checked": .int(Int64(session.missingChecked)),
            "missing_found": .int(Int64(session.missingFound)),
            "docs_read": .int(Int64(session.documentsRead)),
            "docs_written": .int(Int64(session.documentsWritten)),
            "doc_write_failures": .int(Int64(session.writeFailures)),
        ])
        history.insert(entry, at: 0)
        return .dictionary([
            "session_id": .string(session.sessionID),
            "source_last_seq": sequence,
            "replication_id_version": .int(3),
            "history": .array(Array(history.prefix(historyLimit))),
        ])
    }

    /// RFC 1123, as CouchDB writes `start_time` and `end_time`.
    static func httpDate(_ date: Date) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        return formatter.string(from: date)
    }
}
