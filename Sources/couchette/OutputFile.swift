import Foundation

/// Buffered text output to standard output or a file (`export --output`).
final class OutputFile {
    private let handle: FileHandle
    private let ownsHandle: Bool
    private var buffer: [UInt8] = []

    /// Standard output when `path` is nil or `-`; else `path`, created or truncated.
    init(path: String?) throws {
        guard let path, path != "-" else {
            Terminal.flushStandardOutput()
            handle = FileHandle.standardOutput
            ownsHandle = false
            return
        }
        guard FileManager.default.createFile(atPath: path, contents: nil),
            let handle = FileHandle(forWritingAtPath: path)
        else {
            throw ToolError("cannot write \(path)")
        }
        self.handle = handle
        ownsHandle = true
    }

    func writeLine(_ line: String) throws {
        buffer.append(contentsOf: line.utf8)
        buffer.append(0x0A)
        if buffer.count >= 1 << 16 { try flush() }
    }

    func flush() throws {
        guard !buffer.isEmpty else { return }
        try handle.write(contentsOf: buffer)
        buffer.removeAll(keepingCapacity: true)
    }

    func close() throws {
        try flush()
        if ownsHandle { try handle.close() }
    }
}
