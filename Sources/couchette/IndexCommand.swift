import Couchette
import Foundation

/// `couchette index DB create NAME 'expr, expr' [--where COND] [--fts [--language L] [--ignore-accents]]
/// | drop NAME | list [--collection C]`
enum IndexCommand {
    static let command = Command(
        name: "index",
        arguments: [
            .database, .init("ACTION", "create, drop or list"),
            .init("NAME", "the index's name (create, drop)", isOptional: true),
            .init("EXPRESSIONS", "comma-separated SQL++ expressions to index (create)", isOptional: true),
        ],
        summary: "Create, drop or list a collection's value and full-text indexes",
        discussion: """
            Examples:
              couchette index app.couchette create byCity 'address.city, name' --collection people
              couchette index app.couchette create openByDate 'date' --where "status = 'open'"
              couchette index app.couchette create search 'title, body' --fts --language en --collection notes
              couchette index app.couchette drop byCity --collection people
              couchette index app.couchette list
            `list` prints one `collection: index` line per index (of every collection without --collection).
            Creating an index that exists with the same expressions does nothing; with others it replaces it.
            A full-text index (--fts) is searched with MATCH(NAME, 'terms') and ranked with RANK(NAME).
            """,
        options: [
            .collection, .init(name: "where", valueName: "COND", help: "index only the documents matching COND (create)"),
            .init(name: "fts", valueName: nil, help: "create a full-text index (create)"),
            .init(
                name: "language", valueName: "CODE", help: "full-text stemming and stop words, an ISO-639 code such as en (create --fts)"),
            .init(name: "ignore-accents", valueName: nil, help: "full-text matching ignores accents (create --fts)"),
        ]
    ) { arguments in
        let positional = arguments.positional
        let action = positional[1]
        try await withOpenDatabase(positional[0]) { database in
            switch action {
            case "create":
                guard positional.count == 4 else { throw UsageError("create needs NAME and EXPRESSIONS") }
                let expressions = splitExpressions(positional[3])
                guard !expressions.isEmpty else { throw UsageError("EXPRESSIONS is empty") }
                let fullText = arguments.flag("fts")
                if !fullText && (arguments.options["language"] != nil || arguments.flag("ignore-accents")) {
                    throw UsageError("--language and --ignore-accents only go with --fts")
                }
                let collection = try arguments.collectionName.existing(in: database)
                let config: any IndexConfiguration =
                    fullText
                    ? FullTextIndexConfiguration(
                        expressions, where: arguments.options["where"],
                        ignoreAccents: arguments.flag("ignore-accents"), language: arguments.options["language"])
                    : ValueIndexConfiguration(expressions, where: arguments.options["where"])
                try await collection.createIndex(withName: positional[2], config: config)
                print(
                    "Created \(fullText ? "full-text index" : "index") \(positional[2]) on \(collection.fullName) (\(expressions.joined(separator: ", ")))"
                )
            case "drop":
                guard positional.count == 3 else { throw UsageError("drop needs NAME and nothing else") }
                if arguments.options["where"] != nil { throw UsageError("--where only goes with create") }
                let collection = try arguments.collectionName.existing(in: database)
                try await collection.deleteIndex(forName: positional[2])
            case "list":
                guard positional.count == 2 else { throw UsageError("list takes no NAME") }
                let collections =
                    arguments.options["collection"] == nil
                    ? try database.scopes().flatMap { try $0.collections() }
                    : [try arguments.collectionName.existing(in: database)]
                for collection in collections {
                    for name in try await collection.indexes() { print("\(collection.fullName): \(name)") }
                }
            default:
                throw UsageError("unknown action '\(action)' (expected create, drop or list)")
            }
        }
    }

    /// Splits at the commas that are not inside parentheses, brackets, braces or quotes.
    static func splitExpressions(_ text: String) -> [String] {
        var parts: [String] = [], current = "", depth = 0
        var quote: Character?
        for character in text {
            if let open = quote {
                if character == open { quote = nil }
            } else if character == "'" || character == "\"" || character == "`" {
                quote = character
            } else if "([{".contains(character) {
                depth += 1
            } else if ")]}".contains(character) {
                depth -= 1
            } else if character == ",", depth == 0 {
                parts.append(current)
                current = ""
                continue
            }
            current.append(character)
        }
        parts.append(current)
        return parts.map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
    }
}
