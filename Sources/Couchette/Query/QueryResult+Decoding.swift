extension QueryResult {
    /// Decodes this row into a model, as Couchbase Lite's Reactive APIs do.
    ///
    /// Fields are read from the row's columns by name; with a `dataKey`, fields the row lacks at
    /// its top level are read from the dictionary column of that name (the `* AS data` of
    /// `SELECT meta().id AS id, * AS data FROM tasks`). A `@DocumentID` property reads the column
    /// whose name matches the property (select `meta().id AS id`). Decoding reads the row's binary
    /// encoding through `DocumentDecoder`, with its conversions (ISO-8601 dates, range-checked
    /// integers, …).
    ///
    /// ```swift
    /// let query = try db.createQuery("SELECT meta().id AS id, * AS data FROM _default.tasks")
    /// for result in try await query.execute() {
    ///     let task = try result.data(as: TodoTask.self, dataKey: "data")
    /// }
    /// ```
    ///
    /// - Throws: `.invalidQuery` naming the field when the model needs a field the row lacks
    ///   (Couchbase Lite's behaviour); otherwise the `DecodingError` with its coding path.
    public func data<T: Decodable>(as type: T.Type, dataKey: String? = nil) throws -> T {
        var fields: [String: Value] = [:]
        if let dataKey, let index = columns.index[dataKey], case .dictionary(let nested)? = values[index]?.value {
            fields = nested
        }
        fields.merge(dictionaryValue) { _, topLevel in topLevel }
        let bytes = try ValueEncoder.encode(.dictionary(fields))
        do {
            return try DocumentDecoder.decode(T.self, from: EncodedValue(bytes: bytes))
        } catch DecodingError.keyNotFound(let key, let context) {
            let path = (context.codingPath + [key]).map(\.stringValue).joined(separator: ".")
            throw CouchetteError(
                .invalidQuery,
                "query result has no field '\(path)' for \(T.self) (columns: \(keys.joined(separator: ", "))\(dataKey.map { "; data key '\($0)'" } ?? ""))"
            )
        }
    }
}

extension ResultSet {
    /// Decodes every row into a model; see ``QueryResult/data(as:dataKey:)``.
    ///
    /// ```swift
    /// let tasks = try await query.execute().data(as: TodoTask.self)
    /// ```
    ///
    /// Decodes all rows at once: for very large results, iterate and decode row by row instead.
    public func data<T: Decodable>(as type: T.Type, dataKey: String? = nil) throws -> [T] {
        try map { try $0.data(as: type, dataKey: dataKey) }
    }
}
