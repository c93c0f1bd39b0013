import Foundation

/// Splits an import file into one JSON text per document, remembering where each starts.
///
/// Two layouts, told apart by the first non-blank character: a JSON array (`[` — each element is
/// a record) or JSON lines (anything else — each non-blank line is a record). Records are only
/// split here, not parsed: the library's JSON parser reads each one, so a malformed record is
/// reported with its line number.
final class JSONRecordReader {
    struct Record {
        let text: String
        /// 1-based line where the record starts.
        let line: Int
    }

    enum Layout { case lines, array }

    let layout: Layout
    private let data: Data
    private var offset: Int
    private var line = 1
    private var finished = false

    /// Reads `path`, or standard input for `-`.
    init(path: String) throws {
        if path == "-" {
            data = FileHandle.standardInput.readDataToEndOfFile()
        } else {
            guard FileManager.default.isReadableFile(atPath: path) else { throw ToolError("cannot read \(path)") }
            do {
                data = try Data(contentsOf: URL(fileURLWithPath: path), options: .alwaysMapped)
            } catch {
                throw ToolError("cannot read \(path): \(error.localizedDescription)")
            }
        }
        var start = data.starts(with: [0xEF, 0xBB, 0xBF]) ? 3 : 0
        let firstByte = data.withUnsafeBytes { bytes -> UInt8? in
            while start < bytes.count, Self.isBlank(bytes[start]) { start += 1 }
            return start < bytes.count ? bytes[start] : nil
        }
        layout = firstByte == UInt8(ascii: "[") ? .array : .lines
        offset = data.starts(with: [0xEF, 0xBB, 0xBF]) ? 3 : 0
        if layout == .array {
            // Count the lines before the '[' and step over it.
            line += data[offset..<start].reduce(0) { $0 + ($1 == 0x0A ? 1 : 0) }
            offset = start + 1
        }
    }

    /// Bytes consumed so far and in all, for progress.
    var progress: (done: Int, total: Int) { (offset, data.count) }

    /// The next record, nil at the end. Throws when an array is not closed or has stray text.
    func next() throws -> Record? {
        guard !finished else { return nil }
        return try data.withUnsafeBytes { bytes in
            switch layout {
            case .lines: return nextLine(bytes)
            case .array: return try nextElement(bytes)
            }
        }
    }

    private func nextLine(_ bytes: UnsafeRawBufferPointer) -> Record? {
        while offset < bytes.count {
            let start = offset
            var end = start
            while end < bytes.count && bytes[end] != 0x0A { end += 1 }
            offset = end + 1
            defer { line += 1 }
            var last = end
            while last > start && Self.isBlank(bytes[last - 1]) { last -= 1 }
            var first = start
            while first < last && Self.isBlank(bytes[first]) { first += 1 }
            if first < last {
                return Record(text: String(decoding: UnsafeRawBufferPointer(rebasing: bytes[first..<last]), as: UTF8.self), line: line)
            }
        }
        finished = true
        return nil
    }

    private func nextElement(_ bytes: UnsafeRawBufferPointer) throws -> Record? {
        // Skip blanks before the element.
        while offset < bytes.count && Self.isBlank(bytes[offset]) {
            if bytes[offset] == 0x0A { line += 1 }
            offset += 1
        }
        guard offset < bytes.count else { throw ToolError("line \(line): the JSON array is not closed with ']'") }
        if bytes[offset] == UInt8(ascii: "]") {
            offset += 1
            finished = true
            try expectOnlyBlanks(bytes)
            return nil
        }
        let start = offset
        let startLine = line
        var depth = 0
        var inString = false
        var escaped = false
        while offset < bytes.count {
            let byte = bytes[offset]
            if byte == 0x0A { line += 1 }
            if inString {
                if escaped {
                    escaped = false
                } else if byte == UInt8(ascii: "\\") {
                    escaped = true
                } else if byte == UInt8(ascii: "\"") {
                    inString = false
                }
            } else {
                switch byte {
                case UInt8(ascii: "\""): inString = true
                case UInt8(ascii: "{"), UInt8(ascii: "["): depth += 1
                case UInt8(ascii: "}"), UInt8(ascii: "]"):
                    if depth == 0 {
                        // The closing bracket of the array itself.
                        let text = String(decoding: UnsafeRawBufferPointer(rebasing: bytes[start..<offset]), as: UTF8.self)
                        offset += 1
                        finished = true
                        try expectOnlyBlanks(bytes)
                        return Record(text: text.trimmingCharacters(in: .whitespacesAndNewlines), line: startLine)
                    }
                    depth -= 1
                case UInt8(ascii: ","):
                    if depth == 0 {
                        let text = String(decoding: UnsafeRawBufferPointer(rebasing: bytes[start..<offset]), as: UTF8.self)
                        offset += 1
                        return Record(text: text.trimmingCharacters(in: .whitespacesAndNewlines), line: startLine)
                    }
                default: break
                }
            }
            offset += 1
        }
        throw ToolError("line \(startLine): the JSON array is not closed with ']'")
    }

    private func expectOnlyBlanks(_ bytes: UnsafeRawBufferPointer) throws {
        while offset < bytes.count {
            if bytes[offset] == 0x0A {
                line += 1
            } else if !Self.isBlank(bytes[offset]) {
                throw ToolError("line \(line): unexpected text after the JSON array")
            }
            offset += 1
        }
    }

    private static func isBlank(_ byte: UInt8) -> Bool {
        byte == 0x20 || byte == 0x0A || byte == 0x0D || byte == 0x09
    }
}
