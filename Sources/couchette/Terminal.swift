import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// What the tool knows about where its output goes: terminals get tables, progress bars and
/// colors (never with `NO_COLOR`); pipes and files get plain, stable text.
enum Terminal {
    static var standardOutputIsTerminal: Bool { isatty(STDOUT_FILENO) == 1 }
    static var standardErrorIsTerminal: Bool { isatty(STDERR_FILENO) == 1 }
    static var standardInputIsTerminal: Bool { isatty(STDIN_FILENO) == 1 }

    /// Colors on standard output: only on a terminal, never when `NO_COLOR` is set (no-color.org).
    static var colorsOnStandardOutput: Bool {
        standardOutputIsTerminal && ProcessInfo.processInfo.environment["NO_COLOR"] == nil
    }

    static var colorsOnStandardError: Bool {
        standardErrorIsTerminal && ProcessInfo.processInfo.environment["NO_COLOR"] == nil
    }

    /// `text` in bold when `enabled`.
    static func bold(_ text: String, _ enabled: Bool) -> String { enabled ? "\u{1B}[1m\(text)\u{1B}[0m" : text }
    /// `text` dimmed when `enabled`.
    static func dim(_ text: String, _ enabled: Bool) -> String { enabled ? "\u{1B}[2m\(text)\u{1B}[0m" : text }

    /// Writes `message` and a newline to standard error (after whatever standard output holds).
    static func printError(_ message: String) {
        flushStandardOutput()
        let text = colorsOnStandardError ? "\u{1B}[31m\(message)\u{1B}[0m" : message
        FileHandle.standardError.write(Data((text + "\n").utf8))
    }

    /// Writes `text` to standard error as is (progress lines).
    static func writeError(_ text: String) {
        FileHandle.standardError.write(Data(text.utf8))
    }

    /// Flushes `print`'s buffer.
    static func flushStandardOutput() {
        fflush(nil)
    }
}
