/// Receives what ``JSONParser`` reads, in document order. Strings and keys arrive unescaped, as
/// UTF-8 bytes valid only during the call.
protocol JSONSink {
    mutating func null()
    mutating func bool(_ value: Bool)
    mutating func integer(_ value: Int64)
    mutating func double(_ value: Double)
    /// An integer literal too large for `Int64`, digits kept.
    mutating func largeInteger(_ value: LargeInteger)
    mutating func string(_ utf8: UnsafeBufferPointer<UInt8>)
    mutating func beginObject()
    mutating func key(_ utf8: UnsafeBufferPointer<UInt8>)
    mutating func endObject()
    mutating func beginArray()
    mutating func endArray()
}

/// A strict JSON (RFC 8259) reader over UTF-8 bytes, generic over what it builds.
///
/// It reads the caller's bytes in place: a string without escapes reaches the sink as a slice of
/// the input, so only strings with escapes are copied (into one reused buffer).
///
/// Errors are `.invalidParameter` naming the byte offset of the first bad byte. Integer literals
/// stay integers (beyond 64 bits as ``LargeInteger``); literals with a fraction or an exponent are
/// doubles, and one beyond Double's range is an error, as in CouchDB; nesting is limited to ``JSON/maximumDepth`` levels.
struct JSONParser<Sink: JSONSink> {
    private let bytes: UnsafeBufferPointer<UInt8>
    private var position = 0
    /// Reused for every string with escapes, so unescaping allocates nothing once it has grown.
    private var scratch: [UInt8] = []

    private init(bytes: UnsafeBufferPointer<UInt8>) { self.bytes = bytes }

    static func parse(_ text: String, into sink: inout Sink) throws {
        var text = text
        try text.withUTF8 { try parse(utf8: $0, into: &sink) }
    }

    /// Parses one JSON value from UTF-8 bytes, valid only during the call.
    static func parse(utf8: UnsafeBufferPointer<UInt8>, into sink: inout Sink) throws {
        var parser = JSONParser(bytes: utf8)
        parser.skipWhitespace()
        try parser.parseValue(depth: 0, into: &sink)
        parser.skipWhitespace()
        guard parser.position == parser.bytes.count else { throw parser.error("unexpected text after the JSON value") }
    }

    /// An error naming `offset` (by default the current position) as the first bad byte.
    private func error(_ problem: String, at offset: Int? = nil) -> CouchetteError {
        CouchetteError(.invalidParameter, "invalid JSON at byte \(offset ?? position): \(problem)")
    }

    private mutating func skipWhitespace() {
        while position < bytes.count {
            switch bytes[position] {
            case 0x20, 0x0A, 0x0D, 0x09: position += 1
            default: return
            }
        }
    }

    private mutating func parseValue(depth: Int, into sink: inout Sink) throws {
        guard depth < JSON.maximumDepth else { throw error("nesting deeper than \(JSON.maximumDepth) levels") }
        guard position < bytes.count else { throw error("unexpected end of input") }
        switch bytes[position] {
        case UInt8(ascii: "{"): try parseObject(depth: depth, into: &sink)
        case UInt8(ascii: "["): try parseArray(depth: depth, into: &sink)
        case UInt8(ascii: "\""):
            try parseString { sink.string($0) }
        case UInt8(ascii: "t"): try expect("true"); sink.bool(true)
        case UInt8(ascii: "f"): try expect("false"); sink.bool(false)
        case UInt8(ascii: "n"): try expect("null"); sink.null()
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): try parseNumber(into: &sink)
        default: throw error("unexpected character '\(Character(Unicode.Scalar(bytes[position])))'")
        }
    }

    private mutating func expect(_ word: StaticString) throws {
        let count = word.utf8CodeUnitCount
        guard position + count <= bytes.count else { throw error("expected '\(word)'") }
        for index in 0..<count where bytes[position + index] != word.utf8Start[index] {
            throw error("expected '\(word)'")
        }
        position += count
    }

    private mutating func parseObject(depth: Int, into sink: inout Sink) throws {
        position += 1
        sink.beginObject()
        skipWhitespace()
        if position < bytes.count, bytes[position] == UInt8(ascii: "}") {
            position += 1
            sink.endObject()
            return
        }
        while true {
            skipWhitespace()
            guard position < bytes.count, bytes[position] == UInt8(ascii: "\"") else { throw error("expected a key string") }
            try parseString { sink.key($0) }
            skipWhitespace()
            guard position < bytes.count, bytes[position] == UInt8(ascii: ":") else { throw error("expected ':'") }
            position += 1
            skipWhitespace()
            try parseValue(depth: depth + 1, into: &sink)
            skipWhitespace()
            guard position < bytes.count else { throw error("unterminated object") }
            if bytes[position] == UInt8(ascii: ",") { position += 1; continue }
            if bytes[position] == UInt8(ascii: "}") {
                position += 1
                sink.endObject()
                return
            }
            throw error("expected ',' or '}'")
        }
    }

    private mutating func parseArray(depth: Int, into sink: inout Sink) throws {
        position += 1
        sink.beginArray()
        skipWhitespace()
        if position < bytes.count, bytes[position] == UInt8(ascii: "]") {
            position += 1
            sink.endArray()
            return
        }
        while true {
            skipWhitespace()
            try parseValue(depth: depth + 1, into: &sink)
            skipWhitespace()
            guard position < bytes.count else { throw error("unterminated array") }
            if bytes[position] == UInt8(ascii: ",") { position += 1; continue }
            if bytes[position] == UInt8(ascii: "]") {
                position += 1
                sink.endArray()
                return
            }
            throw error("expected ',' or ']'")
        }
    }

    /// Reads a string (the opening quote is at `position`) and hands its unescaped UTF-8 bytes to
    /// `deliver`: a slice of the input when it has no escapes, else ``scratch``.
    private mutating func parseString(_ deliver: (UnsafeBufferPointer<UInt8>) -> Void) throws {
        position += 1
        let start = position
        // The common case, a string without escapes, scanned with a local index (the loop below
        // keeps `position` in memory and checks bounds on every byte).
        if let base = bytes.baseAddress {
            var index = start
            let end = bytes.count
            while index < end {
                let byte = base[index]
                if byte == UInt8(ascii: "\"") {
                    deliver(UnsafeBufferPointer(start: base + start, count: index - start))
                    position = index + 1
                    return
                }
                if byte == UInt8(ascii: "\\") || byte < 0x20 { break }
                index += 1
            }
            position = index
        }
        while position < bytes.count {
            let byte = bytes[position]
            switch byte {
            case UInt8(ascii: "\""):
                deliver(UnsafeBufferPointer(rebasing: bytes[start..<position]))
                position += 1
                return
            case UInt8(ascii: "\\"):
                scratch.removeAll(keepingCapacity: true)
                scratch.append(contentsOf: bytes[start..<position])
                try parseEscapedRest()
                scratch.withUnsafeBufferPointer { deliver($0) }
                return
            case 0x00..<0x20:
                throw error("control character in string")
            default:
                position += 1
            }
        }
        throw error("unterminated string")
    }

    /// Reads the rest of a string from its first backslash (at `position`) into ``scratch``.
    private mutating func parseEscapedRest() throws {
        while position < bytes.count {
            let byte = bytes[position]
            position += 1
            switch byte {
            case UInt8(ascii: "\""):
                return
            case UInt8(ascii: "\\"):
                try parseEscape()
            case 0x00..<0x20:
                throw error("control character in string", at: position - 1)
            default:
                scratch.append(byte)
            }
        }
        throw error("unterminated string")
    }

    private mutating func parseEscape() throws {
        let escapeStart = position - 1
        guard position < bytes.count else { throw error("unterminated escape") }
        let escaped = bytes[position]
        position += 1
        switch escaped {
        case UInt8(ascii: "\""): scratch.append(0x22)
        case UInt8(ascii: "\\"): scratch.append(0x5C)
        case UInt8(ascii: "/"): scratch.append(0x2F)
        case UInt8(ascii: "b"): scratch.append(0x08)
        case UInt8(ascii: "f"): scratch.append(0x0C)
        case UInt8(ascii: "n"): scratch.append(0x0A)
        case UInt8(ascii: "r"): scratch.append(0x0D)
        case UInt8(ascii: "t"): scratch.append(0x09)
        case UInt8(ascii: "u"):
            var scalar = try parseHex4()
            if (0xD800..<0xDC00).contains(scalar) {
                guard position + 1 < bytes.count, bytes[position] == UInt8(ascii: "\\"),
                    bytes[position + 1] == UInt8(ascii: "u")
                else { throw error("lone surrogate", at: escapeStart) }
                position += 2
                let low = try parseHex4()
                guard (0xDC00..<0xE000).contains(low) else { throw error("invalid surrogate pair", at: escapeStart) }
                scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
            } else if (0xDC00..<0xE000).contains(scalar) {
                throw error("lone surrogate", at: escapeStart)
            }
            guard let unicode = Unicode.Scalar(scalar) else { throw error("invalid code point", at: escapeStart) }
            scratch.append(contentsOf: UTF8.encode(unicode)!)
        default: throw error("invalid escape", at: escapeStart)
        }
    }

    private mutating func parseHex4() throws -> UInt32 {
        var scalar: UInt32 = 0
        for _ in 0..<4 {
            guard position < bytes.count else { throw error("truncated \\u escape") }
            let byte = bytes[position]
            let digit: UInt32
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = UInt32(byte - UInt8(ascii: "0"))
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = UInt32(byte - UInt8(ascii: "a") + 10)
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = UInt32(byte - UInt8(ascii: "A") + 10)
            default: throw error("invalid hex digit in \\u escape")
            }
            position += 1
            scalar = scalar << 4 | digit
        }
        return scalar
    }

    private func isDigit(_ index: Int) -> Bool {
        index < bytes.count && bytes[index] >= UInt8(ascii: "0") && bytes[index] <= UInt8(ascii: "9")
    }

    private mutating func parseNumber(into sink: inout Sink) throws {
        let start = position
        var isInteger = true
        let negative = bytes[position] == UInt8(ascii: "-")
        if negative { position += 1 }
        guard isDigit(position) else { throw error("invalid number") }
        // Accumulate as a negative number so that Int64.min fits; nil once it overflows.
        var magnitude: Int64? = 0
        if bytes[position] == UInt8(ascii: "0") {
            position += 1
        } else {
            while isDigit(position) {
                let digit = Int64(bytes[position] - UInt8(ascii: "0"))
                if let current = magnitude {
                    let (times, overflow1) = current.multipliedReportingOverflow(by: 10)
                    let (next, overflow2) = times.subtractingReportingOverflow(digit)
                    magnitude = overflow1 || overflow2 ? nil : next
                }
                position += 1
            }
        }
        if position < bytes.count, bytes[position] == UInt8(ascii: ".") {
            isInteger = false
            position += 1
            guard isDigit(position) else { throw error("digits expected after '.'") }
            while isDigit(position) { position += 1 }
        }
        if position < bytes.count, bytes[position] == UInt8(ascii: "e") || bytes[position] == UInt8(ascii: "E") {
            isInteger = false
            position += 1
            if position < bytes.count, bytes[position] == UInt8(ascii: "+") || bytes[position] == UInt8(ascii: "-") { position += 1 }
            guard isDigit(position) else { throw error("digits expected in exponent") }
            while isDigit(position) { position += 1 }
        }
        if isInteger, let magnitude {
            if negative {
                sink.integer(magnitude)
                return
            }
            if magnitude != .min {
                sink.integer(-magnitude)
                return
            }
        }
        let text = String(decoding: bytes[start..<position], as: UTF8.self)
        if isInteger, let large = LargeInteger(text: text) {
            sink.largeInteger(large)
            return
        }
        guard let number = Double(text), number.isFinite else { throw error("number \(text) out of range", at: start) }
        sink.double(number)
    }
}

/// Builds a ``Value`` tree from parser events.
struct ValueSink: JSONSink {
    private enum Frame {
        case object([String: Value], pendingKey: String?)
        case array([Value])
    }

    private var stack: [Frame] = []
    private(set) var result: Value = .null

    private mutating func emit(_ value: Value) {
        guard let top = stack.popLast() else {
            result = value
            return
        }
        switch top {
        case .object(var entries, let key):
            entries[key ?? ""] = value
            stack.append(.object(entries, pendingKey: nil))
        case .array(var elements):
            elements.append(value)
            stack.append(.array(elements))
        }
    }

    mutating func null() { emit(.null) }
    mutating func bool(_ value: Bool) { emit(.bool(value)) }
    mutating func integer(_ value: Int64) { emit(.int(value)) }
    mutating func double(_ value: Double) { emit(.double(value)) }
    mutating func largeInteger(_ value: LargeInteger) { emit(.largeInteger(value)) }
    mutating func string(_ utf8: UnsafeBufferPointer<UInt8>) { emit(.string(String(decoding: utf8, as: UTF8.self))) }
    mutating func beginObject() { stack.append(.object([:], pendingKey: nil)) }

    mutating func key(_ utf8: UnsafeBufferPointer<UInt8>) {
        guard case .object(let entries, _) = stack.popLast() else { return }
        stack.append(.object(entries, pendingKey: String(decoding: utf8, as: UTF8.self)))
    }

    mutating func endObject() {
        guard case .object(let entries, _) = stack.popLast() else { return }
        emit(.dictionary(entries))
    }

    mutating func beginArray() { stack.append(.array([])) }

    mutating func endArray() {
        guard case .array(let elements) = stack.popLast() else { return }
        emit(.array(elements))
    }
}
