extension Database {
    /// Parses and compiles a SQL++ query.
    ///
    /// Collections are looked up now: the FROM clause may name `_`, `_default`,
    /// `_default._default` or the database's name (all the default collection), a collection of
    /// the default scope, or `scope.collection`.
    ///
    /// ```swift
    /// let query = try db.createQuery("SELECT meta().id AS id, * AS data FROM _default.tasks ORDER BY title")
    /// let rows = try await query.execute().allResults()
    /// ```
    ///
    /// - Throws: `.invalidQuery` with the position and what was expected for a malformed query,
    ///   naming the collection when it does not exist; `.notOpen` when the database is closed.
    public nonisolated func createQuery(_ query: String) throws -> Query {
        try reader.checkOpen()
        let statement = try Parser.parse(query)
        let reader = self.reader
        let plan = try QueryCompiler.compile(
            statement, databaseName: name,
            lookup: { scope, name in
                try reader.spec(scope: scope, name: name)
            },
            fullTextLookup: { spec, index in
                try reader.read { try $0.indexDefinitions(spec).first { $0.name == index }?.definition }
            })
        return Query(database: self, text: query, plan: plan)
    }
}
