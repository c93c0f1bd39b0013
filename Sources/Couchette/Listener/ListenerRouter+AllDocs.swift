/// `GET|POST /{db}/_all_docs`, CouchDB's built-in view of live documents by id.
///
/// Options come from the query string and, for `POST`, the JSON body (which wins):
/// `include_docs`, `limit`, `skip`, `descending`, `startkey`/`endkey` (JSON strings, with their
/// `start_key`/`end_key` aliases), `inclusive_end`, `key`, `update_seq`, and `keys`: then rows
/// come in the order of `keys`, a deleted document's row carries its deletion revision and
/// `"deleted": true` in `value` (and `"doc": null`), and a missing one is `{"key", "error": "not_found"}`.
extension ListenerRouter {
    func allDocuments(_ request: HTTPRequest, _ keyspace: Keyspace) async throws -> HTTPResponse {
        var body: [String: Value] = [:]
        if request.method == "POST", !request.body.isEmpty {
            guard case .dictionary(let object) = try ListenerRouter.jsonBody(request) else {
                throw ListenerError.badRequest("_all_docs expects a JSON object such as {\"keys\": [...]}")
            }
            body = object
        }
        let options = AllDocsOptions(query: request.query, body: body)
        let includeDocs = try options.bool("include_docs") ?? false
        let skip = try options.integer("skip") ?? 0
        let limit = try options.integer("limit") ?? Int.max
        let page = try await keyspace.peer.changes(since: nil, limit: Int.max, documentIDs: nil, wait: .normal)
        let total = page.results.count { !$0.deleted }

        let rows: [Value]
        var offset: Value
        if let keys = try options.json("keys") {
            guard case .array(let list) = keys else { throw ListenerError.badRequest("`keys` member must be an array.") }
            if try ["key", "startkey", "start_key", "endkey", "end_key"].contains(where: { try options.json($0) != nil }) {
                throw ListenerError.badRequest("`keys` is incompatible with `key`, `start_key` and `end_key`")
            }
            rows = try list.dropFirst(skip).prefix(limit).map { try keyRow($0, keyspace, includeDocs: includeDocs) }
            offset = .null
        } else {
            let ids = try options.selectedIDs(page.results.filter { !$0.deleted }.map(\.id))
            rows = try ids.dropFirst(skip).prefix(limit).compactMap { id in
                guard let document = try keyspace.collection.storedState(id: id).document, let rev = document.revisionID else { return nil }
                return row(id: id, rev: rev, document: document, includeDocs: includeDocs)
            }
            offset = .int(Int64(min(skip, ids.count)))
        }
        var result: [String: Value] = ["total_rows": .int(Int64(total)), "offset": offset, "rows": .array(rows)]
        if try options.bool("update_seq") == true { result["update_seq"] = try await keyspace.peer.info().updateSequence }
        return .json(.dictionary(result))
    }

    private func row(id: String, rev: String, document: Document?, includeDocs: Bool) -> Value {
        var row: [String: Value] = ["id": .string(id), "key": .string(id), "value": .dictionary(["rev": .string(rev)])]
        if includeDocs, let document {
            row["doc"] = CouchDBDocument.json(
                PeerRevision(id: id, revisionID: rev, deleted: false, body: document.root.decode(), history: [rev]),
                includeHistory: false)
        }
        return .dictionary(row)
    }

    /// The row for one of `keys`: live, deleted, or not found.
    private func keyRow(_ key: Value, _ keyspace: Keyspace, includeDocs: Bool) throws -> Value {
        guard case .string(let id) = key, !id.isEmpty else { return .dictionary(["key": key, "error": .string("not_found")]) }
        let state = try keyspace.collection.storedState(id: id)
        guard let rev = state.revisionID else { return .dictionary(["key": key, "error": .string("not_found")]) }
        if let document = state.document { return row(id: id, rev: rev, document: document, includeDocs: includeDocs) }
        var row: [String: Value] = ["id": .string(id), "key": key, "value": .dictionary(["rev": .string(rev), "deleted": .bool(true)])]
        if includeDocs { row["doc"] = .null }
        return .dictionary(row)
    }
}

/// `_all_docs` parameters: each read from the JSON body when there, else from the query string
/// (where JSON values arrive as text).
private struct AllDocsOptions {
    let query: [String: String]
    let body: [String: Value]

    func json(_ name: String) throws -> Value? {
        if let value = body[name] { return value }
        guard let text = query[name] else { return nil }
        return try ListenerRouter.parseJSON(text, what: name)
    }

    func bool(_ name: String) throws -> Bool? {
        if let value = body[name] {
            guard case .bool(let flag) = value else { throw ListenerError.badRequest("\(name) must be true or false") }
            return flag
        }
        switch query[name] {
        case nil: return nil
        case "true"?: return true
        case "false"?: return false
        case let other?: throw ListenerError.badRequest("\(name) must be true or false, got '\(other)'")
        }
    }

    func integer(_ name: String) throws -> Int? {
        if let value = body[name] {
            guard case .int(let number) = value, number >= 0 else {
                throw ListenerError.badRequest("\(name) must be a non-negative integer")
            }
            return Int(clamping: number)
        }
        return try ListenerRouter.integer(query[name], name: name)
    }

    /// A document id bound: `names[0]` or its alias, a JSON string.
    private func idBound(_ names: [String]) throws -> String? {
        guard let value = try names.lazy.compactMap({ try json($0) }).first else { return nil }
        guard case .string(let id) = value else { throw ListenerError.badRequest("\(names[0]) must be a JSON string (a document id)") }
        return id
    }

    /// `ids` sorted by raw bytes (CouchDB's `_all_docs` collation) in the requested direction,
    /// cut to `key`, `startkey` … `endkey` (`inclusive_end`).
    func selectedIDs(_ all: [String]) throws -> [String] {
        let descending = try bool("descending") ?? false
        let before: (String, String) -> Bool = { $0.utf8.lexicographicallyPrecedes($1.utf8) }
        var ids = all.sorted(by: before)
        if descending { ids.reverse() }
        if let exact = try idBound(["key"]) { ids = ids.filter { $0 == exact } }
        // "Comes before" in the requested direction.
        let precedes: (String, String) -> Bool = descending ? { before($1, $0) } : before
        if let start = try idBound(["startkey", "start_key"]) { ids = ids.filter { !precedes($0, start) } }
        if let end = try idBound(["endkey", "end_key"]) {
            let inclusive = try bool("inclusive_end") ?? true
            ids = ids.filter { inclusive ? !precedes(end, $0) : precedes($0, end) }
        }
        return ids
    }
}
