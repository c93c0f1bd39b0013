extension Collection {
    /// Creates an index on this collection, or replaces the index of that name when its
    /// configuration differs. Creating the same index again does nothing.
    ///
    /// Existing documents are indexed before this returns, a few thousand per transaction so that
    /// writers are not held up by one giant transaction; queries start using the index once it
    /// is complete. Every later save, delete, purge and expiration updates it in the same
    /// transaction. The definition is stored: the index is there after reopening.
    ///
    /// ```swift
    /// try await people.createIndex(withName: "byName", config: ValueIndexConfiguration(["lastName", "firstName"]))
    /// let query = try db.createQuery("SELECT * FROM people WHERE lastName = 'Doe' ORDER BY firstName LIMIT 20")
    /// print(try await query.explain())   // INDEX SCAN byName …
    /// ```
    ///
    /// - Throws: `.invalidQuery` naming the index and the problem when an expression or the
    ///   `where:` condition does not parse or compile (or uses an aggregate or a `$parameter`);
    ///   `.invalidParameter` for an empty name; `.notOpen` when the database is closed or the
    ///   collection deleted.
    public func createIndex(withName name: String, config: any IndexConfiguration) async throws {
        guard !name.isEmpty, name.utf8.count <= 400 else {
            throw CouchetteError(.invalidParameter, "index name '\(name)' must be 1 to 400 bytes long")
        }
        try await database.createIndex(name, config, in: spec)
    }

    /// Deletes the index `name`. Deleting an index that does not exist does nothing.
    ///
    /// ```swift
    /// try await people.deleteIndex(forName: "byName")
    /// ```
    /// - Throws: `.notOpen` when the database is closed or the collection deleted.
    public func deleteIndex(forName name: String) async throws {
        try await database.deleteIndex(name, in: spec)
    }

    /// The names of this collection's indexes, sorted.
    ///
    /// ```swift
    /// print(try await people.indexes())   // ["byName"]
    /// ```
    /// - Throws: `.notOpen` when the database is closed or the collection deleted.
    public func indexes() async throws -> [String] {
        try reader.checkUsable(spec)
        return try reader.read { try $0.indexDefinitions(spec).map(\.name) }.sorted()
    }
}

extension Database {
    func createIndex(_ name: String, _ configuration: any IndexConfiguration, in spec: CollectionSpec) async throws {
        try reader.checkUsable(spec)
        guard let definition = try writeIndexes(in: spec, { txn, indexes in try indexes.define(txn, spec, name, configuration) }) else {
            return
        }
        try await build(name, definition, in: spec)
    }

    /// Indexes the existing documents batch by batch; other writes may commit between batches
    /// (they maintain the index for what they touch, so both orders give the same entries).
    private func build(_ name: String, _ definition: IndexDefinition, in spec: CollectionSpec) async throws {
        var position: [UInt8]?
        repeat {
            try reader.checkUsable(spec)
            let after = position
            position = try writeIndexes(in: spec) { txn, indexes in try indexes.buildStep(txn, spec, name, definition, after: after) }
            if position != nil { await Task.yield() }
        } while position != nil
    }

    func deleteIndex(_ name: String, in spec: CollectionSpec) async throws {
        try reader.checkUsable(spec)
        _ = try writeIndexes(in: spec, usingReserve: true) { txn, indexes in try indexes.delete(txn, spec, name) }
    }

    /// Rebuilds every index of every collection (`performMaintenance(type: .reindex)`).
    func rebuildIndexes() async throws {
        for spec in reader.collections {
            let names = try reader.read { try $0.indexDefinitions(spec).map(\.name) }
            for name in names {
                guard let definition = try writeIndexes(in: nil, { txn, indexes in try indexes.reset(txn, spec, name) }) else { continue }
                try await build(name, definition, in: spec)
            }
        }
    }
}
