import CEditLine
import Foundation

/// Reads the shell's input: through libedit (line editing, history saved in
/// `~/.couchette_history`) when standard input is a terminal, else plain lines from the pipe or
/// file, without prompts.
final class LineEditor {
    let isInteractive: Bool
    private let historyPath: String?

    init() {
        isInteractive = Terminal.standardInputIsTerminal
        guard isInteractive else {
            historyPath = nil
            return
        }
        let home = ProcessInfo.processInfo.environment["HOME"] ?? NSHomeDirectory()
        historyPath = ProcessInfo.processInfo.environment["COUCHETTE_HISTORY"] ?? home + "/.couchette_history"
        using_history()
        stifle_history(1000)
        if let historyPath { _ = read_history(historyPath) }
    }

    /// The next line without its newline, or nil at the end of input (Ctrl-D).
    func readLine(prompt: String) -> String? {
        guard isInteractive else { return Swift.readLine(strippingNewline: true) }
        Terminal.flushStandardOutput()
        guard let pointer = readline(prompt) else { return nil }
        defer { free(pointer) }
        let line = String(cString: pointer)
        if !line.trimmingCharacters(in: .whitespaces).isEmpty { add_history(line) }
        return line
    }

    /// Saves the history.
    func close() {
        if let historyPath { _ = write_history(historyPath) }
    }
}
