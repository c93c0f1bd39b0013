import Couchette
import Foundation

/// `couchette`: look into, script and demo Couchette databases.
@main
enum CouchetteTool {
    // A new subcommand is one more file declaring a `Command` and one more entry here.
    static let commands: [Command] = [
        DemoCommand.command, InfoCommand.command, ImportCommand.command, ExportCommand.command,
        GetCommand.command, PutCommand.command, RemoveCommand.command, PurgeCommand.command,
        QueryCommand.command, WatchCommand.command, ShellCommand.command, CompactCommand.command, CheckCommand.command,
        WriteLoopCommand.command, IndexCommand.command, ServeCommand.command, ReplicateCommand.command,
        BlobCommand.command, AttachCommand.command, BatchCommand.command,
    ]

    static func main() async {
        let arguments = Array(CommandLine.arguments.dropFirst())
        guard let name = arguments.first, !["--help", "-h", "help"].contains(name) else {
            if arguments.count > 1, let command = commands.first(where: { $0.name == arguments[1] }) {
                print(command.help, terminator: "")
            } else {
                print(overview)
            }
            return
        }
        guard let command = commands.first(where: { $0.name == name }) else {
            Terminal.printError("couchette: unknown command '\(name)'\n\n\(overview)")
            exit(ExitStatus.usage)
        }
        let rest = Array(arguments.dropFirst())
        let optionsPart = rest.firstIndex(of: "--").map { Array(rest[..<$0]) } ?? rest
        if optionsPart.contains("--help") || optionsPart.contains("-h") {
            print(command.help, terminator: "")
            return
        }
        let status = await run(command, rest)
        Terminal.flushStandardOutput()
        if status != 0 { exit(status) }
    }

    /// Runs `command`, turning its errors into one line on standard error and an exit status.
    static func run(_ command: Command, _ arguments: [String]) async -> Int32 {
        do {
            try await command.run(try ParsedArguments(arguments, for: command))
            return 0
        } catch let error as UsageError {
            Terminal.printError("couchette \(command.name): \(error)\nUsage: \(command.usage)")
            return ExitStatus.usage
        } catch let error as ExitRequest {
            return error.status
        } catch {
            Terminal.printError("couchette \(command.name): \(describe(error))")
            return ExitStatus.failure
        }
    }

    /// One line naming the problem: a ``CouchetteError``'s message with its kind, else the error.
    static func describe(_ error: any Error) -> String {
        switch error {
        case let error as CouchetteError:
            switch error.code {
            case .invalidQuery: "invalid query: \(error.message)"
            case .notFound, .invalidParameter, .conflict: error.message
            default: "\(error.message) (\(error.code))"
            }
        case let error as ToolError: error.description
        case let error as DecodingError: "cannot decode: \(error)"
        default: String(describing: error)
        }
    }

    static var overview: String {
        var text =
            "couchette — look into, script and demo Couchette databases\n\nUsage: couchette COMMAND [ARGUMENTS] [OPTIONS]\n\nCommands:\n"
        for command in commands where !command.isHidden {
            text += "  " + command.name.padding(toLength: 10, withPad: " ", startingAt: 0) + command.summary + "\n"
        }
        text += "\n" + Command.databaseNote + "\n\nExit status: 0 success, 1 runtime error, 2 usage error."
        text += "\nRun 'couchette COMMAND --help' for a command's arguments and options."
        return text
    }
}

/// Ends the command with `status` after it has reported the problem itself (the shell, `check`).
struct ExitRequest: Error {
    let status: Int32
}
