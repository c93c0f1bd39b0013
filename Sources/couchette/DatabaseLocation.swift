import Couchette
import Foundation

/// Where a command's `DB` argument points: `path/name` and `path/name.couchette` both name the
/// folder `path/name.couchette/`, which is the database `name` in the directory `path` (a bare
/// `name` is in the current directory).
struct DatabaseLocation: Equatable {
    let name: String
    let directory: String

    static let suffix = ".couchette"

    init(_ argument: String) throws {
        guard !argument.isEmpty else { throw UsageError("the database argument is empty") }
        var text = argument
        while text.count > 1 && text.hasSuffix("/") { text.removeLast() }
        let url = URL(fileURLWithPath: text)
        var name = url.lastPathComponent
        if name.hasSuffix(Self.suffix) { name.removeLast(Self.suffix.count) }
        guard !name.isEmpty, name != ".", name != "..", name != "/" else {
            throw UsageError("'\(argument)' does not name a database (expected path/name or path/name.couchette)")
        }
        self.name = name
        directory = url.deletingLastPathComponent().path
    }

    /// The database folder, `directory/name.couchette`.
    var folder: String { directory + "/" + name + Self.suffix }

    var exists: Bool { Database.exists(withName: name, inDirectory: directory) }

    /// Opens the database. Unless `create`, a missing database is an error rather than a new,
    /// empty one (a typo should not create a folder).
    func open(create: Bool = false) throws -> Database {
        if !create && !exists {
            throw ToolError("no database at \(folder)")
        }
        return try Database(name: name, config: DatabaseConfiguration(directory: directory))
    }
}

/// Opens the database `argument` names, runs `body`, and closes it (also when `body` throws).
func withOpenDatabase<R>(
    _ argument: String, create: Bool = false,
    _ body: (Database) async throws -> R
) async throws -> R {
    let database = try DatabaseLocation(argument).open(create: create)
    do {
        let result = try await body(database)
        try await database.close()
        return result
    } catch {
        try? await database.close()
        throw error
    }
}

/// A collection named as `SCOPE.NAME` or `NAME` (in `_default`); nil means `_default._default`.
struct CollectionName: Equatable, CustomStringConvertible {
    let scope: String
    let name: String

    static let defaultName = "_default"
    static let defaultCollection = CollectionName(scope: defaultName, name: defaultName)

    init(scope: String, name: String) {
        self.scope = scope
        self.name = name
    }

    init(_ text: String?) throws {
        guard let text else {
            self = Self.defaultCollection
            return
        }
        let parts = text.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        guard (1...2).contains(parts.count), !parts.contains(where: \.isEmpty) else {
            throw UsageError("'\(text)' is not a collection name (expected SCOPE.NAME or NAME)")
        }
        scope = parts.count == 2 ? parts[0] : Self.defaultName
        name = parts.last!
    }

    var description: String { "\(scope).\(name)" }

    /// The existing collection, or an error naming it.
    func existing(in database: Database) throws -> Collection {
        guard let collection = try database.collection(name: name, scope: scope) else {
            throw ToolError("no collection \(self) in \(database.name)")
        }
        return collection
    }

    /// The collection, created when missing.
    func created(in database: Database) async throws -> Collection {
        if let collection = try database.collection(name: name, scope: scope) { return collection }
        return try await database.createCollection(name: name, scope: scope)
    }
}

extension ParsedArguments {
    /// The collection named by `--collection`.
    var collectionName: CollectionName {
        get throws { try CollectionName(options["collection"]) }
    }
}
