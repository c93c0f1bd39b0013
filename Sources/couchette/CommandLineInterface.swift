import Foundation

/// One subcommand of the `couchette` tool: its declaration is also its `--help` text.
struct Command: Sendable {
    struct Option: Sendable {
        let name: String
        let valueName: String?
        let help: String
    }

    let name: String
    let arguments: [String]
    let summary: String
    let options: [Option]
    let isHidden: Bool
    let run: @Sendable (ParsedArguments) async throws -> Void

    init(name: String, arguments: [String] = [], summary: String, options: [Option] = [], isHidden: Bool = false,
         run: @escaping @Sendable (ParsedArguments) async throws -> Void) {
        self.name = name
        self.arguments = arguments
        self.summary = summary
        self.options = options
        self.isHidden = isHidden
        self.run = run
    }

    var usage: String {
        (["couchette", name] + arguments + options.map { "[--\($0.name)\($0.valueName.map { " \($0)" } ?? "")]" })
            .joined(separator: " ")
    }

    var help: String {
        var text = "\(summary)\n\nUsage: \(usage)\n"
        if !options.isEmpty {
            text += "\nOptions:\n"
            for option in options {
                let flag = "--\(option.name)\(option.valueName.map { " \($0)" } ?? "")"
                text += "  " + flag.padding(toLength: 24, withPad: " ", startingAt: 0) + option.help + "\n"
            }
        }
        return text
    }
}

/// The positional arguments and `--name value` options given to a command.
struct ParsedArguments: Sendable {
    var positional: [String] = []
    var options: [String: String] = [:]
    var flags: Set<String> = []

    /// Splits `arguments` according to `command`'s declared options.
    init(_ arguments: [String], for command: Command) throws {
        var index = 0
        while index < arguments.count {
            let argument = arguments[index]
            index += 1
            guard argument.hasPrefix("--") else {
                positional.append(argument)
                continue
            }
            let name = String(argument.dropFirst(2))
            guard let option = command.options.first(where: { $0.name == name }) else {
                throw UsageError("unknown option --\(name) for '\(command.name)'")
            }
            if option.valueName != nil {
                guard index < arguments.count else { throw UsageError("--\(name) needs a value") }
                options[name] = arguments[index]
                index += 1
            } else {
                flags.insert(name)
            }
        }
        guard positional.count == command.arguments.count else {
            throw UsageError("'\(command.name)' takes \(command.arguments.count) argument(s): \(command.usage)")
        }
    }
}

struct UsageError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// Writes a line to standard output at once, so that a parent process sees it even if this one is
/// killed right after.
func emit(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}
