/// A namespace of collections. `_default` always exists; other scopes exist while they hold a
/// collection.
///
/// ```swift
/// let scope = try db.scope(name: "inventory")
/// for collection in try scope?.collections() ?? [] { print(collection.fullName) }
/// ```
public final class Scope: Sendable, Hashable {
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

    public static func == (lhs: Scope, rhs: Scope) -> Bool {
        lhs.database === rhs.database && lhs.name == rhs.name
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(ObjectIdentifier(database))
        hasher.combine(name)
    }
}
