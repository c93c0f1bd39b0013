/// A namespace of collections. `_default` always exists; other scopes exist while they hold a
/// collection.
///
/// ```swift
/// let scope = try db.scope(name: "inventory")
/// for collection in try scope?.collections() ?? [] { print(collection.fullName) }
/// ```
public final class Scope: Sendable, Hashable {
    /// The scope's name, such as `_default` or `inventory`.
    public let name: String
    /// The database this scope belongs to.
    public let database: Database

    init(name: String, database: Database) {
        self.name = name
        self.database = database
    }

    /// The collections in this scope, sorted by name.
    public func collections() throws -> [Collection] {
        try database.collections(scope: name)
    }

    /// The collection `name` in this scope, or nil.
    public func collection(name: String) throws -> Collection? {
        try database.collection(name: name, scope: self.name)
    }

    /// Two scopes are equal when they have the same name in the same `Database` instance.
    public static func == (lhs: Scope, rhs: Scope) -> Bool {
        lhs.database === rhs.database && lhs.name == rhs.name
    }

    /// Hashes what ``==(_:_:)`` compares, so scopes can key dictionaries and sets.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(ObjectIdentifier(database))
        hasher.combine(name)
    }
}
