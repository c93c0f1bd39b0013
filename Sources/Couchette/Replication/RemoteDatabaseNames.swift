import Foundation

/// Which remote database each collection of a ``URLEndpoint`` replication syncs with.
///
/// The rule (the URL's last path segment is its database `db`):
/// - one replicated collection: `db`, whatever the collection's local name (what CouchDB,
///   PouchDB and a single-collection `couchette serve` offer);
/// - several: each collection's ``CollectionConfiguration/remoteName``; a collection without one
///   syncs with the keyspace a Couchette ``URLEndpointListener`` serves it under — `db` for the
///   default collection, `db.scope.name` for the others — so Couchette↔Couchette replication of
///   several collections needs no configuration, while against CouchDB (whose database names
///   allow no dots) every collection but the default one needs a `remoteName`;
/// - a `remoteName` always wins. It is a CouchDB database name (`^[a-z][a-z0-9_$()+/-]*$`) or
///   a Couchette keyspace `db.scope.name`; two collections may not name the same one.
enum RemoteDatabaseNames {
    /// The remote database (unencoded) of each collection, in order.
    /// - Throws: `.invalidParameter` for an illegal `remoteName`, two collections mapped to one
    ///   database, or a URL that names no database.
    static func resolve(url: URL, collections: [Collection], configs: [CollectionConfiguration]) throws -> [String] {
        let encoded = URLComponents(url: url, resolvingAgainstBaseURL: false)?.percentEncodedPath ?? ""
        guard let segment = encoded.split(separator: "/").last, let last = String(segment).removingPercentEncoding, !last.isEmpty else {
            throw CouchetteError(.invalidParameter, "'\(RemotePeer.redacted(url))' names no database (expected http://host:port/db)")
        }
        var names: [String] = []
        for (collection, config) in zip(collections, configs) {
            if let remoteName = config.remoteName {
                guard isCouchDBName(remoteName) || isCouchetteKeyspace(remoteName) else {
                    throw CouchetteError(
                        .invalidParameter,
                        """
                        remoteName '\(remoteName)' of \(collection.fullName) is not a legal CouchDB database name \
                        (a lowercase letter, then a-z 0-9 _ $ ( ) + - /) nor a Couchette keyspace db.scope.collection
                        """)
                }
                names.append(remoteName)
            } else if collections.count == 1 || (collection.spec.scope == Catalog.defaultName && collection.name == Catalog.defaultName) {
                names.append(last)
            } else {
                names.append("\(last).\(collection.spec.scope).\(collection.name)")
            }
        }
        var seen: [String: Collection] = [:]
        for (name, collection) in zip(names, collections) {
            if let other = seen[name] {
                throw CouchetteError(
                    .invalidParameter,
                    """
                    \(other.fullName) and \(collection.fullName) would both replicate with the remote database '\(name)': \
                    give each its own remoteName
                    """)
            }
            seen[name] = collection
        }
        return names
    }

    /// CouchDB's rule for database names.
    static func isCouchDBName(_ name: String) -> Bool {
        guard let first = name.utf8.first, (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(first), name.utf8.count <= 238 else {
            return false
        }
        return name.utf8.allSatisfy { byte in
            (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
                || Array("_$()+-/".utf8).contains(byte)
        }
    }

    /// `db.scope.collection` with a CouchDB database name and Couchette scope and collection names.
    static func isCouchetteKeyspace(_ name: String) -> Bool {
        let parts = name.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        guard parts.count == 3, isCouchDBName(parts[0]) else { return false }
        return parts.dropFirst().allSatisfy { part in
            !part.isEmpty && part.utf8.count <= 251
                && part.utf8.allSatisfy { byte in
                    (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
                        || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || Array("_-%".utf8).contains(byte)
                }
        }
    }
}
