import Foundation

/// Answers the CouchDB HTTP API for a ``URLEndpointListener``: authentication, read-only checks,
/// and dispatch by keyspace and path to the handlers in the `ListenerRouter+…` files.
final class ListenerRouter: Sendable {
    /// One served collection and the replication peer over it.
    struct Keyspace: Sendable {
        let name: String
        let collection: Collection
        let peer: LocalPeer
    }

    let config: URLEndpointListenerConfiguration
    let keyspaces: [String]
    private let byName: [String: Collection]
    private let peers = Locked<[String: LocalPeer]>([:])
    let sessions: SessionStore

    init(config: URLEndpointListenerConfiguration) {
        self.config = config
        sessions = SessionStore(lifetime: config.sessionLifetime)
        keyspaces = config.collections.map(ListenerRouter.keyspaceName)
        var byName: [String: Collection] = [:]
        for (name, collection) in zip(keyspaces, config.collections) where byName[name] == nil { byName[name] = collection }
        self.byName = byName
    }

    /// `db` for a database's default collection, `db.scope.collection` for the others.
    static func keyspaceName(_ collection: Collection) -> String {
        collection.spec.scope == "_default" && collection.name == "_default"
            ? collection.database.name
            : "\(collection.database.name).\(collection.spec.scope).\(collection.name)"
    }

    func validate() throws {
        guard !keyspaces.isEmpty else {
            throw CouchetteError(.invalidParameter, "a listener needs at least one collection to serve")
        }
        guard Set(keyspaces).count == keyspaces.count else {
            throw CouchetteError(.invalidParameter, "two served collections share a keyspace name: \(keyspaces.joined(separator: ", "))")
        }
    }

    func handle(_ request: HTTPRequest) async -> HTTPResponse {
        let passwords = config.authenticator as? ListenerPasswordAuthenticator
        if request.pathComponents == ["_session"] { return session(request, passwords) }
        if let authenticator = passwords {
            switch credentials(request, authenticator) {
            case .user: break
            case .anonymous, .wrongPassword:
                // No WWW-Authenticate header, as CouchDB: browsers would pop up a login dialog.
                return .error(401, "unauthorized", "Name or password is incorrect.")
            case .invalidSession:
                return ListenerRouter.invalidSession
            }
        }
        do {
            return try await route(request)
        } catch {
            return .error(error)
        }
    }

    // MARK: - Routing

    private func route(_ request: HTTPRequest) async throws -> HTTPResponse {
        let parts = request.pathComponents
        guard let name = parts.first else {
            try allow(request, ["GET", "HEAD"])
            return try serverInfo()
        }
        guard let collection = byName[name] else {
            if name.hasPrefix("_") { return .error(404, "not_found", "unsupported server endpoint /\(name)") }
            return .error(404, "not_found", "Database does not exist: no collection is served as '\(name)'")
        }
        let keyspace = Keyspace(name: name, collection: collection, peer: try peer(name, collection))
        let rest = Array(parts.dropFirst())
        switch rest.first {
        case nil:
            try allow(request, ["GET", "HEAD"])
            return try await databaseInfo(keyspace)
        case "_changes":
            try allow(request, ["GET", "POST"], exact: rest.count == 1)
            return try await changes(request, keyspace)
        case "_revs_diff":
            try allow(request, ["POST"], exact: rest.count == 1)
            return try await revsDiff(request, keyspace)
        case "_bulk_get":
            try allow(request, ["POST"], exact: rest.count == 1)
            return try await bulkGet(request, keyspace)
        case "_bulk_docs":
            try allow(request, ["POST"], exact: rest.count == 1)
            try requireWritable()
            return try await bulkDocs(request, keyspace)
        case "_all_docs":
            try allow(request, ["GET", "HEAD", "POST"], exact: rest.count == 1)
            return try await allDocuments(request, keyspace)
        case "_ensure_full_commit":
            try allow(request, ["POST"], exact: rest.count == 1)
            try await keyspace.peer.ensureFullCommit()
            return .json(.dictionary(["ok": .bool(true), "instance_start_time": .string("0")]), status: 201)
        case "_local_docs":
            try allow(request, ["GET", "HEAD"], exact: rest.count == 1)
            return try localDocuments(keyspace)
        case "_revs_limit":
            // The database's maxRevisionHistory; fixed when it is opened, so not settable here.
            try allow(request, ["GET"], exact: rest.count == 1)
            return .json(.int(Int64(keyspace.collection.reader.configuration.maxRevisionHistory)))
        case "_local":
            guard rest.count > 1 else { return .error(400, "bad_request", "a _local document needs an id") }
            try allow(request, ["GET", "HEAD", "PUT", "DELETE"])
            return try await localDocument(request, keyspace, id: rest.dropFirst().joined(separator: "/"))
        case let first? where first.hasPrefix("_") && first != "_design":
            return .error(400, "bad_request", "unsupported database endpoint \(first)")
        default:
            try allow(request, ["GET", "HEAD", "PUT", "DELETE"])
            if request.method == "GET" || request.method == "HEAD", let response = try attachment(request, keyspace, path: rest) {
                return response
            }
            if request.method == "PUT" || request.method == "DELETE" { try requireWritable() }
            return try await document(request, keyspace, id: rest.joined(separator: "/"))
        }
    }

    private func peer(_ name: String, _ collection: Collection) throws -> LocalPeer {
        if let peer = peers.withLock({ $0[name] }) { return peer }
        let peer = try LocalPeer(collection: collection)
        peers.withLock { $0[name] = peer }
        return peer
    }

    private func allow(_ request: HTTPRequest, _ methods: Set<String>, exact: Bool = true) throws {
        guard exact else { throw ListenerError.notFound("unsupported path \(request.path)") }
        guard methods.contains(request.method) else {
            throw ListenerError.methodNotAllowed("only \(methods.sorted().joined(separator: ",")) allowed for \(request.path)")
        }
    }

    private func requireWritable() throws {
        if config.readOnly { throw ListenerError.forbidden("this listener is read-only") }
    }

    // MARK: - Server and database

    /// `GET /`. `uuid` (CouchDB's server id, 32 hex digits) is the first served database's
    /// persistent UUID, so it survives restarts: PouchDB builds replication ids from it.
    private func serverInfo() throws -> HTTPResponse {
        let uuid = try config.collections.first.map { try $0.reader.uuid() } ?? ""
        let hex = uuid.lowercased().filter(\.isHexDigit)
        return .json(
            .dictionary([
                "couchdb": .string("Welcome"), "version": .string("3.3.3"), "uuid": .string(hex),
                "vendor": .dictionary(["name": .string("Couchette")]), "features": .array([]),
            ]))
    }

    private func databaseInfo(_ keyspace: Keyspace) async throws -> HTTPResponse {
        let info = try await keyspace.peer.info()
        let collection = keyspace.collection
        let count = try await collection.count
        let reader = collection.reader
        try reader.checkUsable(collection.spec)
        let statistics = try reader.read { try $0.statistics(collection.spec) }
        // `file` is the whole database file (every collection shares it); `active` and
        // `external` the stored records of this collection (CouchDB: live data, uncompressed).
        let file = reader.fileSize
        return .json(
            .dictionary([
                "db_name": .string(keyspace.name), "update_seq": info.updateSequence,
                "doc_count": .int(Int64(clamping: count)), "doc_del_count": .int(Int64(clamping: statistics.deleted)),
                "purge_seq": .int(0), "compact_running": .bool(false), "instance_start_time": .string("0"), "disk_format_version": .int(8),
                "sizes": .dictionary([
                    "active": .int(Int64(clamping: statistics.recordBytes)),
                    "external": .int(Int64(clamping: statistics.recordBytes)),
                    "file": .int(Int64(clamping: file)),
                ]),
                "props": .dictionary([:]),
            ]))
    }
}

/// Failures the router raises itself, mapped to CouchDB's status and error names.
enum ListenerError: Error {
    case badRequest(String)
    case notFound(String)
    case methodNotAllowed(String)
    case forbidden(String)

    var response: HTTPResponse { .error(status, name, reason) }

    var status: Int {
        switch self {
        case .badRequest: 400
        case .notFound: 404
        case .methodNotAllowed: 405
        case .forbidden: 403
        }
    }

    var name: String {
        switch self {
        case .badRequest: "bad_request"
        case .notFound: "not_found"
        case .methodNotAllowed: "method_not_allowed"
        case .forbidden: "forbidden"
        }
    }

    var reason: String {
        switch self {
        case .badRequest(let reason), .notFound(let reason), .methodNotAllowed(let reason), .forbidden(let reason): reason
        }
    }
}
