import Couchette
import Foundation

/// `couchette query DB 'SQL++' [--param NAME=JSON ...] [--format table|json|jsonl] [--explain]`
enum QueryCommand {
    static let command = Command(
        name: "query", arguments: [.database, .init("SQL++", "one SELECT statement (quote it for the shell)")],
        summary: "Run a SQL++ query and print its results",
        discussion: """
            Formats: 'table' (default on a terminal) is an aligned table followed by the row count and
            the elapsed time; 'json' prints one JSON array of the rows' objects, in order; 'jsonl'
            (default when the output is not a terminal) prints one JSON object per row and line.
            Parameters are JSON values: --param min=3 --param name='"Ann"' --param ids='["a","b"]'.

            Example: couchette query people.couchette \\
                       'SELECT name.first, age FROM _default WHERE age >= $min ORDER BY age' --param min=30
            """,
        options: [
            .init(name: "param", valueName: "NAME=JSON", help: "set the query parameter $NAME", isRepeatable: true),
            .init(name: "format", valueName: "FORMAT", help: "how to print the rows", choices: ResultFormat.names),
            .init(name: "explain", valueName: nil, help: "print how the query would run instead of running it"),
        ]
    ) { arguments in
        let parameters = try QueryCommand.parameters(arguments.repeated["param"] ?? [])
        let format = arguments.options["format"].flatMap(ResultFormat.init(rawValue:)) ?? .automatic
        try await withOpenDatabase(arguments.positional[0]) { database in
            let query = try database.createQuery(arguments.positional[1])
            // Parameters first: the plan of `$name` comparisons depends on their values.
            query.parameters = parameters
            if arguments.flag("explain") {
                print(try await query.explain())
                return
            }
            try await run(query, format: format)
        }
    }

    /// Runs `query` and prints its rows.
    static func run(_ query: Query, format: ResultFormat) async throws {
        let clock = ContinuousClock()
        let start = clock.now
        let results = try await query.execute()
        ResultPrinter.print(results, columns: query.columnNames, format: format, elapsed: clock.now - start)
    }

    /// `NAME=JSON` pairs as ``Parameters``; nil when there are none.
    static func parameters(_ pairs: [String]) throws -> Parameters? {
        guard !pairs.isEmpty else { return nil }
        let parameters = Parameters()
        for pair in pairs {
            guard let equals = pair.firstIndex(of: "="), equals != pair.startIndex else {
                throw UsageError("--param needs NAME=JSON, not '\(pair)'")
            }
            var name = String(pair[..<equals])
            if name.hasPrefix("$") { name.removeFirst() }
            let text = String(pair[pair.index(after: equals)...])
            do {
                parameters.setValue(try JSONText.parseValue(text), forName: name)
            } catch {
                throw UsageError("--param \(name): '\(text)' is not JSON (quote strings: \(name)='\"\(text)\"')")
            }
        }
        return parameters
    }
}
