import Foundation

/// One subcommand of the `couchette` tool: its declaration is also its `--help` text.
///
/// ```swift
/// static let command = Command(
///     name: "get", arguments: [.database, .init("ID", "the document's id")],
///     summary: "Print a document as JSON with its _id and _rev",
///     options: [.collection]
/// ) { arguments in … }
/// ```
struct Command: Sendable {
    /// A positional argument, required and in declaration order.
    struct Argument: Sendable {
        let name: String
        let help: String
        /// Optional arguments come last and may be left out (the command checks what it got).
        let isOptional: Bool

        init(_ name: String, _ help: String = "", isOptional: Bool = false) {
            self.name = name
            self.help = help
            self.isOptional = isOptional
        }
    }

    /// A `--name` flag, or a `--name VALUE` option when `valueName` is set.
    struct Option: Sendable {
        let name: String
        let valueName: String?
        let help: String
        /// When non-empty, the only values the option accepts (checked by the parser, listed by `--help`).
        let choices: [String]
        /// May be given more than once (`--param a=1 --param b=2`).
        let isRepeatable: Bool

        init(name: String, valueName: String?, help: String, choices: [String] = [], isRepeatable: Bool = false) {
            self.name = name
            self.valueName = valueName
            self.help = help
            self.choices = choices
            self.isRepeatable = isRepeatable
        }

        var flag: String { "--\(name)\(valueName.map { " \($0)" } ?? "")" }
    }

    let name: String
    let arguments: [Argument]
    let summary: String
    /// Paragraphs printed after the options by `--help`.
    let discussion: String
    let options: [Option]
    let isHidden: Bool
    let run: @Sendable (ParsedArguments) async throws -> Void

    init(
        name: String, arguments: [Argument] = [], summary: String, discussion: String = "",
        options: [Option] = [], isHidden: Bool = false,
        run: @escaping @Sendable (ParsedArguments) async throws -> Void
    ) {
        self.name = name
        self.arguments = arguments
        self.summary = summary
        self.discussion = discussion
        self.options = options
        self.isHidden = isHidden
        self.run = run
    }

    var usage: String {
        (["couchette", name] + arguments.map { $0.isOptional ? "[\($0.name)]" : $0.name }
            + options.map { "[\($0.flag)\($0.isRepeatable ? " ..." : "")]" })
            .joined(separator: " ")
    }

    var help: String {
        var text = "\(summary)\n\nUsage: \(usage)\n"
        let described = arguments.filter { !$0.help.isEmpty }
        if !described.isEmpty {
            text += "\nArguments:\n"
            for argument in described {
                text += Self.row(argument.name, argument.help)
            }
        }
        text += "\nOptions:\n"
        for option in options {
            var help = option.help
            if !option.choices.isEmpty { help += " (\(option.choices.joined(separator: "|")))" }
            if option.isRepeatable { help += "; repeatable" }
            text += Self.row(option.flag, help)
        }
        text += Self.row("-h, --help", "show this help")
        if arguments.contains(where: { $0.name == Argument.database.name }) {
            text += "\n" + Self.databaseNote + "\n"
        }
        if !discussion.isEmpty { text += "\n" + discussion + "\n" }
        return text
    }

    static let databaseNote = """
        DB names a database folder: 'path/name' and 'path/name.couchette' both mean the folder
        'path/name.couchette/' of the database 'name' (a bare name is looked up in the current
        directory). Commands that write (import, put) create the database when it is missing;
        the others report a missing database as an error.
        """

    private static func row(_ left: String, _ right: String) -> String {
        let padded =
            left.count < 22 ? left.padding(toLength: 22, withPad: " ", startingAt: 0) : left + "\n" + String(repeating: " ", count: 24)
        return "  " + padded + (left.count < 22 ? "  " : "") + right + "\n"
    }
}

extension Command.Argument {
    static let database = Command.Argument("DB", "the database (see below)")
}

extension Command.Option {
    static let collection = Command.Option(
        name: "collection", valueName: "C",
        help: "the collection, as SCOPE.NAME or NAME in _default (default: _default._default)")
}

/// The positional arguments and options given to a command, checked against its declaration.
struct ParsedArguments: Sendable {
    var positional: [String] = []
    /// The last value of each `--name VALUE` option.
    var options: [String: String] = [:]
    /// Every value of each option, in order (for repeatable options).
    var repeated: [String: [String]] = [:]
    var flags: Set<String> = []

    /// Splits `arguments` according to `command`'s declared options. Accepts `--name value`,
    /// `--name=value`, and `--` to end the options (so a positional may start with `--`).
    init(_ arguments: [String], for command: Command) throws {
        var index = 0
        var optionsEnded = false
        while index < arguments.count {
            let argument = arguments[index]
            index += 1
            guard !optionsEnded, argument.hasPrefix("-"), argument != "-" else {
                positional.append(argument)
                continue
            }
            if argument == "--" {
                optionsEnded = true
                continue
            }
            guard argument.hasPrefix("--") else {
                throw UsageError("unknown option \(argument)")
            }
            var name = String(argument.dropFirst(2))
            var inlineValue: String?
            if let equals = name.firstIndex(of: "=") {
                inlineValue = String(name[name.index(after: equals)...])
                name = String(name[..<equals])
            }
            guard let option = command.options.first(where: { $0.name == name }) else {
                throw UsageError("unknown option --\(name)")
            }
            guard option.valueName != nil else {
                if inlineValue != nil { throw UsageError("--\(name) takes no value") }
                flags.insert(name)
                continue
            }
            let value: String
            if let inlineValue {
                value = inlineValue
            } else {
                guard index < arguments.count else { throw UsageError("--\(name) needs a value (\(option.flag))") }
                value = arguments[index]
                index += 1
            }
            if !option.choices.isEmpty && !option.choices.contains(value) {
                throw UsageError("--\(name) must be one of \(option.choices.joined(separator: ", ")), not '\(value)'")
            }
            if !option.isRepeatable && options[name] != nil {
                throw UsageError("--\(name) given more than once")
            }
            options[name] = value
            repeated[name, default: []].append(value)
        }
        let required = command.arguments.filter { !$0.isOptional }.count
        guard (required...command.arguments.count).contains(positional.count) else {
            let expected = command.arguments.map(\.name).joined(separator: " ")
            if positional.count < required {
                let missing = command.arguments[positional.count..<required].map(\.name).joined(separator: " ")
                throw UsageError("missing argument\(required - positional.count > 1 ? "s" : "") \(missing) (expected \(expected))")
            }
            throw UsageError(
                "unexpected argument '\(positional[command.arguments.count])' (expected \(expected.isEmpty ? "none" : expected))")
        }
    }

    func flag(_ name: String) -> Bool { flags.contains(name) }
}

/// A mistake in how the command was called: exit status 2, with the command's usage.
struct UsageError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// A runtime failure the tool explains in one line: exit status 1.
struct ToolError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// Exit statuses: 0 success, 1 runtime error, 2 usage error.
enum ExitStatus {
    static let failure: Int32 = 1
    static let usage: Int32 = 2
}

/// Writes a line to standard output at once, so that a parent process sees it even if this one is
/// killed right after.
func emit(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}
