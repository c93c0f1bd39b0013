import Foundation

/// Reads a MIME multipart body (RFC 2046: `multipart/related`, `multipart/mixed`) as it arrives,
/// in pieces of any size, and reports its parts: each part's headers, then its content in
/// chunks, then its end. Content is never gathered: memory stays at about the largest piece fed
/// plus the delimiter, whatever the size of a part.
///
/// Everything a peer sends is bounded: the boundary (1–70 characters, RFC 2046), the text before
/// the first delimiter, each part's header block and number of headers, and how many parts a
/// body may have. A body that breaks a rule, or ends before its closing delimiter, throws
/// `CouchetteError(.invalidParameter)` naming the problem.
///
/// ```swift
/// var reader = try MultipartReader(contentType: "multipart/related; boundary=\"abc\"")
/// for event in try reader.feed(Array(body.utf8)) {
///     if case .data(let chunk) = event { content.append(chunk) }
/// }
/// try reader.finish()
/// ```
struct MultipartReader {
    enum Event: Equatable {
        /// A part starts; header names are lowercased.
        case part(headers: [String: String])
        /// Content of the current part (may come in any number of chunks, some empty-free).
        case data(Data)
        /// The current part's content is complete.
        case partEnd
        /// The closing delimiter was read: no more parts.
        case end
    }

    /// Limits on what a peer may send.
    struct Limits {
        var headerBytes = 16 * 1024
        var headerCount = 32
        var preambleBytes = 64 * 1024
        var parts = 100_000
    }

    private enum State {
        case preamble, delimiterLine, headers, content, epilogue
    }

    /// `\r\n--boundary`: what ends a part's content.
    private let delimiter: [UInt8]
    private let limits: Limits
    private var state = State.preamble
    private var buffer: [UInt8] = []
    /// Bytes of `buffer` already consumed (dropped in bulk, not one by one).
    private var start = 0
    private var partCount = 0

    /// - Throws: `.invalidParameter` for a boundary that is empty, longer than 70 characters or
    ///   holds characters RFC 2046 does not allow.
    init(boundary: String, limits: Limits = Limits()) throws {
        let bytes = Array(boundary.utf8)
        guard (1...70).contains(bytes.count),
            bytes.allSatisfy({ (0x20...0x7E).contains($0) && $0 != UInt8(ascii: "\"") }),
            bytes.last != UInt8(ascii: " ")
        else {
            throw CouchetteError(.invalidParameter, "multipart boundary '\(boundary.prefix(80))' is not 1–70 printable characters")
        }
        delimiter = Array("\r\n--".utf8) + bytes
        self.limits = limits
    }

    /// A reader for the boundary a `Content-Type` header names.
    /// - Throws: `.invalidParameter` when the type is not `multipart/…` or names no usable boundary.
    init(contentType: String, limits: Limits = Limits()) throws {
        try self.init(boundary: Self.boundary(in: contentType), limits: limits)
    }

    /// The `boundary` parameter of a `multipart/…` content type, quoted or not.
    /// - Throws: `.invalidParameter` when the type is not multipart or has no boundary.
    static func boundary(in contentType: String) throws -> String {
        let parts = contentType.split(separator: ";", omittingEmptySubsequences: false)
        guard let type = parts.first?.trimmingCharacters(in: .whitespaces).lowercased(), type.hasPrefix("multipart/") else {
            throw CouchetteError(.invalidParameter, "content type '\(contentType.prefix(80))' is not multipart")
        }
        for parameter in parts.dropFirst() {
            let pair = parameter.split(separator: "=", maxSplits: 1)
            guard pair.count == 2, pair[0].trimmingCharacters(in: .whitespaces).lowercased() == "boundary" else { continue }
            var value = pair[1].trimmingCharacters(in: .whitespaces)
            if value.count >= 2, value.hasPrefix("\""), value.hasSuffix("\"") { value = String(value.dropFirst().dropLast()) }
            return value
        }
        throw CouchetteError(.invalidParameter, "multipart content type '\(contentType.prefix(80))' has no boundary")
    }

    /// True once the closing delimiter was read.
    var isComplete: Bool {
        if case .epilogue = state { true } else { false }
    }

    /// Takes the next piece of the body and returns what it completed.
    /// - Throws: `.invalidParameter` for a body that breaks the format or a limit.
    mutating func feed(_ bytes: some Swift.Collection<UInt8>) throws -> [Event] {
        if case .epilogue = state { return [] }  // text after the closing delimiter is ignored
        buffer.append(contentsOf: bytes)
        var events: [Event] = []
        while try step(&events) {}
        if start > 0, start >= buffer.count / 2 {
            buffer.removeSubrange(0..<start)
            start = 0
        }
        return events
    }

    /// The body ended.
    /// - Throws: `.invalidParameter` when the closing delimiter has not been read.
    func finish() throws {
        guard isComplete else {
            let place =
                switch state {
                case .preamble: "before its first part"
                case .content: "inside a part"
                default: "between parts"
                }
            throw CouchetteError(.invalidParameter, "multipart body ended \(place), without its closing boundary")
        }
    }

    /// Advances over what the buffer holds; false when it needs more input.
    private mutating func step(_ events: inout [Event]) throws -> Bool {
        let available = buffer.count - start
        switch state {
        case .preamble:
            // The first delimiter may open the body without the CRLF before it.
            let opening = Array(delimiter.dropFirst(2))
            if let found = find(opening, from: start) {
                start = found + opening.count
                state = .delimiterLine
                return true
            }
            if available > limits.preambleBytes {
                throw CouchetteError(.invalidParameter, "multipart body has no boundary in its first \(limits.preambleBytes) bytes")
            }
            return false
        case .delimiterLine:
            // After a delimiter: `--` closes the body; else optional spaces, then CRLF.
            guard available >= 2 else { return false }
            if buffer[start] == UInt8(ascii: "-"), buffer[start + 1] == UInt8(ascii: "-") {
                start += 2
                state = .epilogue
                events.append(.end)
                return false
            }
            var index = start
            while index < buffer.count, buffer[index] == UInt8(ascii: " ") || buffer[index] == UInt8(ascii: "\t") {
                index += 1
                if index - start > 256 { throw CouchetteError(.invalidParameter, "multipart boundary line is too long") }
            }
            guard index + 2 <= buffer.count else { return false }
            guard buffer[index] == 0x0D, buffer[index + 1] == 0x0A else {
                throw CouchetteError(.invalidParameter, "multipart boundary is not followed by a line break")
            }
            start = index + 2
            partCount += 1
            if partCount > limits.parts { throw CouchetteError(.invalidParameter, "multipart body has more than \(limits.parts) parts") }
            state = .headers
            return true
        case .headers:
            // A part without headers starts with its blank line at once.
            if available >= 2, buffer[start] == 0x0D, buffer[start + 1] == 0x0A {
                start += 2
                events.append(.part(headers: [:]))
                state = .content
                return true
            }
            guard let end = find(Array("\r\n\r\n".utf8), from: start, within: limits.headerBytes) else {
                if available > limits.headerBytes {
                    throw CouchetteError(.invalidParameter, "multipart part headers are longer than \(limits.headerBytes) bytes")
                }
                return false
            }
            events.append(.part(headers: try parseHeaders(buffer[start..<end])))
            start = end + 4
            state = .content
            return true
        case .content:
            if let found = find(delimiter, from: start) {
                if found > start { events.append(.data(Data(buffer[start..<found]))) }
                events.append(.partEnd)
                start = found + delimiter.count
                state = .delimiterLine
                return true
            }
            // Everything but a possible beginning of the delimiter is content.
            let safe = buffer.count - (delimiter.count - 1)
            if safe > start {
                events.append(.data(Data(buffer[start..<safe])))
                start = safe
            }
            return false
        case .epilogue:
            return false
        }
    }

    private func parseHeaders(_ block: ArraySlice<UInt8>) throws -> [String: String] {
        var headers: [String: String] = [:]
        let lines = String(decoding: block, as: UTF8.self).components(separatedBy: "\r\n")
        guard lines.count <= limits.headerCount else {
            throw CouchetteError(.invalidParameter, "multipart part has more than \(limits.headerCount) headers")
        }
        for line in lines where !line.isEmpty {
            guard let colon = line.firstIndex(of: ":") else {
                throw CouchetteError(.invalidParameter, "multipart part header '\(line.prefix(80))' has no ':'")
            }
            let name = line[..<colon].trimmingCharacters(in: .whitespaces).lowercased()
            guard !name.isEmpty else { throw CouchetteError(.invalidParameter, "multipart part header '\(line.prefix(80))' has no name") }
            headers[name] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        return headers
    }

    /// The index in `buffer` where `needle` starts, searching from `from` (and, with `within`,
    /// only that many bytes on).
    private func find(_ needle: [UInt8], from: Int, within: Int? = nil) -> Int? {
        let limit = within.map { min(buffer.count, from + $0 + needle.count) } ?? buffer.count
        guard limit - from >= needle.count, let first = needle.first else { return nil }
        return buffer.withUnsafeBufferPointer { haystack -> Int? in
            guard let base = haystack.baseAddress else { return nil }
            var index = from
            let last = limit - needle.count
            while index <= last {
                guard let hit = memchr(base + index, Int32(first), last - index + 1) else { return nil }
                let position = base.distance(to: hit.assumingMemoryBound(to: UInt8.self))
                if memcmp(base + position, needle, needle.count) == 0 { return position }
                index = position + 1
            }
            return nil
        }
    }
}
