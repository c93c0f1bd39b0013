import Couchette
import Foundation

/// `couchette shell DB`
enum ShellCommand {
    static let command = Command(
        name: "shell", arguments: [.database],
        summary: "An interactive prompt for SQL++ statements and dot-commands",
        discussion: """
            Statements end with ';' (several may share a line; one may span lines). Dot-commands:
            \(Shell.dotCommandList(indent: "  "))
            On a terminal the prompt has line editing and history (~/.couchette_history, or
            $COUCHETTE_HISTORY). With standard input from a pipe or a file there is no prompt, and the
            exit status is 1 when any statement or command failed.
            """
    ) { arguments in
        try await withOpenDatabase(arguments.positional[0]) { database in
            let shell = Shell(database: database)
            let failures = await shell.run(LineEditor())
            if failures > 0 && !Terminal.standardInputIsTerminal { throw ExitRequest(status: ExitStatus.failure) }
        }
    }
}

/// The shell's state: the database, the collection `.get` reads, and how results print.
final class Shell {
    struct DotCommand {
        let name: String
        let usage: String
        let help: String
    }

    static let dotCommands: [DotCommand] = [
        .init(name: "collections", usage: ".collections", help: "list collections with document counts"),
        .init(name: "indexes", usage: ".indexes", help: "list indexes"),
        .init(name: "use", usage: ".use COLLECTION", help: "the collection .get reads (SCOPE.NAME or NAME)"),
        .init(name: "get", usage: ".get ID", help: "print a document of that collection with _id and _rev"),
        .init(name: "explain", usage: ".explain SQL++", help: "show how a query runs"),
        .init(name: "mode", usage: ".mode table|json|jsonl", help: "how results print (default: table)"),
        .init(name: "info", usage: ".info", help: "what 'couchette info' prints"),
        .init(name: "help", usage: ".help", help: "this list"),
        .init(name: "quit", usage: ".quit", help: "leave (also .exit or Ctrl-D)"),
    ]

    /// The dot-commands, one per line, their usages aligned.
    static func dotCommandList(indent: String) -> String {
        let width = dotCommands.map(\.usage.count).max()! + 2
        return dotCommands.map { indent + $0.usage.padding(toLength: width, withPad: " ", startingAt: 0) + $0.help }
            .joined(separator: "\n")
    }

    let database: Database
    private(set) var collection = CollectionName.defaultCollection
    private(set) var mode = ResultFormat.table
    private var failures = 0
    private var pending = ""

    init(database: Database) {
        self.database = database
    }

    /// Reads and runs input until `.quit` or its end; returns how many statements and commands failed.
    func run(_ editor: LineEditor) async -> Int {
        if editor.isInteractive {
            print("couchette shell — \(database.path)\nEnter SQL++ statements ending with ';', or .help for commands.")
        }
        defer { editor.close() }
        while let line = editor.readLine(prompt: pending.isEmpty ? "couchette> " : "      ...> ") {
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            if trimmed.hasPrefix(".") && pending.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty == false {
                // A dot-command ends an unterminated statement: run it first.
                await runStatement(pending)
                pending = ""
            }
            if pending.isEmpty && trimmed.hasPrefix(".") {
                if await !dotCommand(trimmed) { break }
                continue
            }
            pending += pending.isEmpty ? line : "\n" + line
            let (statements, rest) = Self.split(pending)
            pending = rest
            for statement in statements { await runStatement(statement) }
        }
        if !pending.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty { await runStatement(pending) }
        Terminal.flushStandardOutput()
        return failures
    }

    /// Complete statements (without their `;`) and the unterminated rest; quotes are respected.
    static func split(_ text: String) -> (statements: [String], rest: String) {
        var statements: [String] = []
        var current = ""
        var quote: Character?
        for character in text {
            if let open = quote {
                if character == open { quote = nil }
                current.append(character)
            } else if character == ";" {
                let statement = current.trimmingCharacters(in: .whitespacesAndNewlines)
                if !statement.isEmpty { statements.append(statement) }
                current = ""
            } else {
                if character == "'" || character == "\"" || character == "`" { quote = character }
                current.append(character)
            }
        }
        return (statements, current.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty ? "" : current)
    }

    private func runStatement(_ text: String) async {
        await report {
            let query = try database.createQuery(text)
            try await QueryCommand.run(query, format: mode)
        }
    }

    /// Runs a dot-command; false for `.quit`.
    private func dotCommand(_ line: String) async -> Bool {
        let parts = line.dropFirst().split(separator: " ", maxSplits: 1).map(String.init)
        let name = parts.first ?? ""
        let argument = parts.count > 1 ? parts[1].trimmingCharacters(in: .whitespaces) : ""
        await report {
            switch name {
            case "quit", "exit": return
            case "help":
                print(Self.dotCommandList(indent: ""))
                print("Anything else is SQL++, ending with ';'.")
            case "collections":
                for scope in try database.scopes() {
                    for collection in try scope.collections() {
                        print("\(collection.fullName)  \(try await collection.count)")
                    }
                }
            case "indexes":
                for collection in try database.scopes().flatMap({ try $0.collections() }) {
                    for index in try await IndexList.names(of: collection) { print("\(collection.fullName): \(index)") }
                }
            case "use":
                let chosen = try CollectionName(try required(argument, "COLLECTION"))
                _ = try chosen.existing(in: database)
                collection = chosen
            case "get":
                print(
                    try await GetCommand.documentJSON(
                        id: try required(argument, "ID"),
                        in: try collection.existing(in: database)))
            case "explain":
                let text = try required(argument, "SQL++").trimmingCharacters(in: CharacterSet(charactersIn: "; "))
                print(try await database.createQuery(text).explain())
            case "mode":
                if argument.isEmpty {
                    print(mode.rawValue)
                } else {
                    guard let format = ResultFormat(rawValue: argument) else {
                        throw ToolError("unknown mode '\(argument)' (use \(ResultFormat.names.joined(separator: ", ")))")
                    }
                    mode = format
                }
            case "info":
                print(try await InfoCommand.report(database))
            default:
                throw ToolError("unknown command .\(name) (.help lists them)")
            }
        }
        return !["quit", "exit"].contains(name)
    }

    private func required(_ argument: String, _ name: String) throws -> String {
        guard !argument.isEmpty else { throw ToolError("missing \(name)") }
        return argument
    }

    /// Runs `body`, printing its error as `Error: …` and counting it.
    private func report(_ body: () async throws -> Void) async {
        do {
            try await body()
        } catch {
            failures += 1
            Terminal.printError("Error: \(CouchetteTool.describe(error))")
        }
    }
}
