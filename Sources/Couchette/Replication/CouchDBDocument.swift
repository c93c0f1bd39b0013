import Foundation

/// Revisions in CouchDB's JSON shape, as `_bulk_get`, `_bulk_docs` and document GETs carry them:
/// the body with `_id`, `_rev`, `_deleted` and `_revisions: {"start": 3, "ids": ["c…", "b…", "a…"]}`
/// (the history, newest first, as digests under one starting generation).
///
/// Attachments: a stored body keeps CouchDB's `_attachments` entries (`content_type`, `digest`,
/// `length`, `revpos`) and Couchbase Lite blob dictionaries anywhere. On the wire every blob
/// dictionary is also an attachment named `blob_/<JSON pointer to it>` (Couchbase Lite's
/// convention for CouchDB-protocol peers), folded back into the blob when it is read; each
/// entry is a stub (`"stub": true`) unless its content travels with the revision, inline as
/// base64 `data`.
enum CouchDBDocument {
    /// Prefix of the attachment names that stand for blob properties.
    static let blobAttachmentPrefix = "blob_"

    /// The JSON object for `revision`; `_revisions` only when `includeHistory`. Content in
    /// `revision.attachments` is inlined as base64 (content that cannot be read goes as a stub,
    /// which the receiver reports as missing).
    static func json(_ revision: PeerRevision, includeHistory: Bool) -> Value {
        json(revision, includeHistory: includeHistory, following: false).json
    }

    /// The JSON object of a multipart body for `revision` (the JSON part): content that travels
    /// is announced `"follows": true` (with `length`) instead of inlined, and returned in the
    /// order its parts must follow.
    static func multipartJSON(_ revision: PeerRevision, includeHistory: Bool) -> (json: Value, following: [FollowingAttachment]) {
        json(revision, includeHistory: includeHistory, following: true)
    }

    private static func json(_ revision: PeerRevision, includeHistory: Bool, following: Bool) -> (
        json: Value, following: [FollowingAttachment]
    ) {
        var object: [String: Value] = [:]
        if case .dictionary(let body) = revision.body { object = body }
        object["_attachments"] = nil
        var parts: [FollowingAttachment] = []
        if !revision.deleted, let attachments = wireAttachments(revision, following: following, parts: &parts) {
            object["_attachments"] = attachments
        }
        object["_id"] = .string(revision.id)
        object["_rev"] = .string(revision.revisionID)
        if revision.deleted { object["_deleted"] = .bool(true) }
        if includeHistory { object["_revisions"] = revisions(revision.history) }
        return (.dictionary(object), parts)
    }

    /// `_attachments` as sent: the stored entries plus one `blob_/…` entry per blob property.
    /// With `following`, travelling content is announced `follows` and appended to it, in name order.
    private static func wireAttachments(_ revision: PeerRevision, following: Bool, parts: inout [FollowingAttachment]) -> Value? {
        guard let bytes = try? ValueEncoder.encode(revision.body) else { return nil }
        let references = BlobSearch.references(in: EncodedValue(bytes: bytes))
        guard !references.isEmpty else { return nil }
        let generation = Int64(RevisionID.generation(of: revision.revisionID) ?? 1)
        var entries: [String: Value] = [:]
        for reference in references {
            var entry: [String: Value] = [
                Blob.Key.contentType: .string(reference.contentType ?? Blob.defaultContentType),
                Blob.Key.digest: .string(reference.digest),
                Blob.Key.revpos: .int(reference.revisionPosition ?? generation),
            ]
            let name = reference.isAttachment ? reference.path : blobAttachmentPrefix + reference.path
            // As CouchDB writes them: inline data without `length` (the data has it), stubs and
            // following parts with.
            if following, let content = revision.attachments[reference.digest], let length = content.length {
                entry["follows"] = .bool(true)
                entry[Blob.Key.length] = .int(Int64(clamping: length))
                parts.append(
                    FollowingAttachment(
                        name: name, contentType: reference.contentType ?? Blob.defaultContentType, length: length, content: content))
            } else if !following, let data = try? revision.attachments[reference.digest]?.data() {
                entry["data"] = .string(data.base64EncodedString())
            } else {
                entry["stub"] = .bool(true)
                if let length = reference.length { entry[Blob.Key.length] = .int(Int64(clamping: length)) }
            }
            entries[name] = .dictionary(entry)
        }
        parts.sort { $0.name < $1.name }
        return .dictionary(entries)
    }

    /// Reads `_attachments` from the wire: entries named `blob_/<pointer>` that point at a blob
    /// dictionary of `body` are folded into it, the others are kept in `body["_attachments"]`
    /// as stored entries. Returns the inline content by digest.
    /// - Throws: `.invalidParameter` for malformed entries or data that is not base64.
    private static func readAttachments(
        _ wire: Value, body: inout [String: Value], id: String,
        generation: Int64
    ) throws -> [String: AttachmentContent] {
        guard case .dictionary(let entries) = wire else {
            throw CouchetteError(.invalidParameter, "document '\(id)': _attachments must be an object")
        }
        var stored: [String: Value] = [:]
        var contents: [String: AttachmentContent] = [:]
        for (name, entryValue) in entries {
            guard case .dictionary(let entry) = entryValue, !name.isEmpty else {
                throw CouchetteError(.invalidParameter, "document '\(id)': attachment '\(name)' must be an object")
            }
            // `follows` (content in a multipart body, which is not read here) counts as a stub:
            // accepted when the content is already stored, else refused as missing.
            var data: Data?
            if let inline = entry["data"] {
                guard case .string(let text) = inline, let decoded = Data(base64Encoded: text) else {
                    throw CouchetteError(.invalidParameter, "document '\(id)': data of attachment '\(name)' is not base64")
                }
                data = decoded
            }
            let digest: String
            if case .string(let given)? = entry[Blob.Key.digest] {
                digest = given
            } else if let data {
                digest = try ContentDigest.sha1(of: data)
            } else {
                throw CouchetteError(.invalidParameter, "document '\(id)': attachment '\(name)' has neither digest nor data")
            }
            // A blob property sent as an attachment: its content belongs to the blob dictionary.
            if name.hasPrefix(blobAttachmentPrefix + "/"),
                case .dictionary(let blob)? = BlobSearch.value(
                    at: String(name.dropFirst(blobAttachmentPrefix.count)), in: .dictionary(body)),
                case .string(let blobDigest)? = blob[Blob.Key.digest]
            {
                if let data { contents[blobDigest] = .data(data) }
                continue
            }
            guard BlobStore.isValidDigest(digest) else {
                throw CouchetteError(.invalidParameter, "document '\(id)': attachment '\(name)' has an unusable digest '\(digest)'")
            }
            if let data { contents[digest] = .data(data) }
            var kept: [String: Value] = [
                Blob.Key.digest: .string(digest),
                Blob.Key.contentType: entry[Blob.Key.contentType] ?? .string(Blob.defaultContentType),
            ]
            if case .int(let length)? = entry[Blob.Key.length], length >= 0 {
                kept[Blob.Key.length] = .int(length)
            } else if let data {
                kept[Blob.Key.length] = .int(Int64(data.count))
            }
            if case .int(let position)? = entry[Blob.Key.revpos], position > 0 {
                kept[Blob.Key.revpos] = .int(position)
            } else {
                kept[Blob.Key.revpos] = .int(generation)
            }
            stored[name] = .dictionary(kept)
        }
        if !stored.isEmpty { body["_attachments"] = .dictionary(stored) }
        return contents
    }

    /// `{"start": N, "ids": [digests]}` for a history that is newest first.
    static func revisions(_ history: [String]) -> Value {
        let start = history.first.flatMap(RevisionID.generation(of:)) ?? 0
        let ids = history.map { Value.string(String(RevisionID.digest(of: $0))) }
        return .dictionary(["start": .int(Int64(start)), "ids": .array(ids)])
    }

    /// Reads a revision from its JSON object. Without `_revisions` the history is just `_rev`.
    /// - Throws: `.invalidParameter` naming the document when `_id` or `_rev` is missing or
    ///   malformed, or the object has other underscore fields.
    static func revision(from json: Value) throws -> PeerRevision {
        guard case .dictionary(var object) = json else {
            throw CouchetteError(.invalidParameter, "a document must be a JSON object, got \(JSON.string(from: json).prefix(80))")
        }
        guard case .string(let id)? = object.removeValue(forKey: "_id"), !id.isEmpty else {
            throw CouchetteError(.invalidParameter, "a document has no _id")
        }
        guard case .string(let revisionID)? = object.removeValue(forKey: "_rev"), RevisionID.generation(of: revisionID) != nil else {
            throw CouchetteError(.invalidParameter, "document '\(id)' has no valid _rev")
        }
        let deleted = object.removeValue(forKey: "_deleted")?.asBool ?? false
        var history = [revisionID]
        if let revisions = object.removeValue(forKey: "_revisions") {
            history = try self.history(revisions, id: id)
        }
        let wireAttachments = object.removeValue(forKey: "_attachments")
        try stripUnderscoreFields(&object, id: id)
        var contents: [String: AttachmentContent] = [:]
        if let wireAttachments, !deleted {
            contents = try readAttachments(
                wireAttachments, body: &object, id: id,
                generation: Int64(RevisionID.generation(of: revisionID) ?? 1))
        }
        return PeerRevision(
            id: id, revisionID: revisionID, deleted: deleted, body: .dictionary(object), history: history,
            attachments: contents)
    }

    /// Removes the metadata fields Couchette does not keep; rejects unknown `_` fields as CouchDB
    /// does. `_attachments` must have been taken out first (see ``revision(from:)``).
    static func stripUnderscoreFields(_ object: inout [String: Value], id: String) throws {
        for key in object.keys where key.hasPrefix("_") {
            switch key {
            case "_attachments", "_conflicts", "_deleted_conflicts", "_local_seq", "_revs_info", "_id", "_rev", "_deleted", "_revisions":
                object.removeValue(forKey: key)
            default:
                throw CouchetteError(.invalidParameter, "document '\(id)' has the reserved field \(key)")
            }
        }
    }

    private static func history(_ revisions: Value, id: String) throws -> [String] {
        guard case .int(let start)? = revisions["start"], start > 0, case .array(let ids)? = revisions["ids"], !ids.isEmpty,
            ids.count <= start
        else {
            throw CouchetteError(.invalidParameter, "document '\(id)' has malformed _revisions")
        }
        return try ids.enumerated().map { offset, digest in
            guard case .string(let text) = digest, !text.isEmpty else {
                throw CouchetteError(.invalidParameter, "document '\(id)' has a non-string id in _revisions")
            }
            return "\(start - Int64(offset))-\(text)"
        }
    }
}
