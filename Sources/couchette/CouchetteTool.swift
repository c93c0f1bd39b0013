import Couchette
import Foundation

/// `couchette`: look into, script and demo Couchette databases.
@main
enum CouchetteTool {
    static let commands: [Command] = [DemoCommand.command, WriteLoopCommand.command]

    static func main() async {
        let arguments = Array(CommandLine.arguments.dropFirst())
        guard let name = arguments.first, name != "--help", name != "-h", name != "help" else {
            print(overview)
            return
        }
        guard let command = commands.first(where: { $0.name == name }) else {
            FileHandle.standardError.write(Data("couchette: unknown command '\(name)'\n\n\(overview)\n".utf8))
            exit(64)
        }
        let rest = Array(arguments.dropFirst())
        if rest.contains("--help") || rest.contains("-h") {
            print(command.help)
            return
        }
        do {
            try await command.run(try ParsedArguments(rest, for: command))
        } catch let error as UsageError {
            FileHandle.standardError.write(Data("couchette \(name): \(error)\n".utf8))
            exit(64)
        } catch {
            FileHandle.standardError.write(Data("couchette \(name): \(error)\n".utf8))
            exit(1)
        }
    }

    static var overview: String {
        var text = "couchette — the Couchette database tool\n\nCommands:\n"
        for command in commands where !command.isHidden {
            text += "  " + command.name.padding(toLength: 12, withPad: " ", startingAt: 0) + command.summary + "\n"
        }
        text += "\nRun 'couchette COMMAND --help' for a command's options."
        return text
    }
}
