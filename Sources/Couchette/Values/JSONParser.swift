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
    /// The input: `count` bytes from `base`. Every read below is at an index checked against
    /// `count` first, so they go through the pointer without a second bounds check.
    private let base: UnsafePointer<UInt8>
    private let count: Int
    private var position = 0
    /// Reused for every string with escapes, so unescaping allocates nothing once it has grown.
    private var scratch: [UInt8] = []

    private init(base: UnsafePointer<UInt8>, count: Int) {
        self.base = base
        self.count = count
    }

    static func parse(_ text: String, into sink: inout Sink) throws {
        var text = text
        try text.withUTF8 { try parse(utf8: $0, into: &sink) }
    }

    /// Parses one JSON value from UTF-8 bytes, valid only during the call.
    static func parse(utf8: UnsafeBufferPointer<UInt8>, into sink: inout Sink) throws {
        guard let base = utf8.baseAddress, !utf8.isEmpty else {
            throw CouchetteError(.invalidParameter, "invalid JSON at byte 0: unexpected end of input")
        }
        var parser = JSONParser(base: base, count: utf8.count)
        parser.skipWhitespace()
        try parser.parseValue(depth: 0, into: &sink)
        parser.skipWhitespace()
        guard parser.position == parser.count else { throw parser.error("unexpected text after the JSON value") }
    }

    /// An error naming `offset` (by default the current position) as the first bad byte.
    private func error(_ problem: String, at offset: Int? = nil) -> CouchetteError {
        CouchetteError(.invalidParameter, "invalid JSON at byte \(offset ?? position): \(problem)")
    }

    /// The byte at `index`, which the caller has checked is below `count`.
    @inline(__always) private func byte(at index: Int) -> UInt8 { base[index] }

    /// Whether the byte at `position` exists and is `expected`.
    @inline(__always) private func isAt(_ expected: UInt8) -> Bool { position < count && base[position] == expected }

    @inline(__always) private mutating func skipWhitespace() {
        // Compact JSON has none: one comparison settles it, and the loop stays out of line.
        guard position < count, base[position] <= 0x20 else { return }
        skipWhitespaceRun()
    }

    @inline(never) private mutating func skipWhitespaceRun() {
        while position < count {
            switch base[position] {
            case 0x20, 0x0A, 0x0D, 0x09: position &+= 1
            default: return
            }
        }
    }

    private mutating func parseValue(depth: Int, into sink: inout Sink) throws {
        guard depth < JSON.maximumDepth else { throw error("nesting deeper than \(JSON.maximumDepth) levels") }
        guard position < count else { throw error("unexpected end of input") }
        switch byte(at: position) {
        case UInt8(ascii: "\""): try parseString { sink.string($0) }
        case UInt8(ascii: "{"): try parseObject(depth: depth, into: &sink)
        case UInt8(ascii: "["): try parseArray(depth: depth, into: &sink)
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): try parseNumber(into: &sink)
        case UInt8(ascii: "t"): try expect("true"); sink.bool(true)
        case UInt8(ascii: "f"): try expect("false"); sink.bool(false)
        case UInt8(ascii: "n"): try expect("null"); sink.null()
        default: throw error("unexpected character '\(Character(Unicode.Scalar(byte(at: position))))'")
        }
    }

    private mutating func expect(_ word: StaticString) throws {
        let length = word.utf8CodeUnitCount
        guard position + length <= count else { throw error("expected '\(word)'") }
        for index in 0..<length where base[position + index] != word.utf8Start[index] {
            throw error("expected '\(word)'")
        }
        position += length
    }

    private mutating func parseObject(depth: Int, into sink: inout Sink) throws {
        position &+= 1
        sink.beginObject()
        skipWhitespace()
        if isAt(UInt8(ascii: "}")) {
            position &+= 1
            sink.endObject()
            return
        }
        while true {
            skipWhitespace()
            guard isAt(UInt8(ascii: "\"")) else { throw error("expected a key string") }
            try parseString { sink.key($0) }
            skipWhitespace()
            guard isAt(UInt8(ascii: ":")) else { throw error("expected ':'") }
            position &+= 1
            skipWhitespace()
            try parseValue(depth: depth + 1, into: &sink)
            skipWhitespace()
            guard position < count else { throw error("unterminated object") }
            let next = byte(at: position)
            position &+= 1
            if next == UInt8(ascii: ",") { continue }
            if next == UInt8(ascii: "}") {
                sink.endObject()
                return
            }
            position &-= 1
            throw error("expected ',' or '}'")
        }
    }

    private mutating func parseArray(depth: Int, into sink: inout Sink) throws {
        position &+= 1
        sink.beginArray()
        skipWhitespace()
        if isAt(UInt8(ascii: "]")) {
            position &+= 1
            sink.endArray()
            return
        }
        while true {
            skipWhitespace()
            try parseValue(depth: depth + 1, into: &sink)
            skipWhitespace()
            guard position < count else { throw error("unterminated array") }
            let next = byte(at: position)
            position &+= 1
            if next == UInt8(ascii: ",") { continue }
            if next == UInt8(ascii: "]") {
                sink.endArray()
                return
            }
            position &-= 1
            throw error("expected ',' or ']'")
        }
    }

    /// The bytes of `word` (eight input bytes, the first lowest) that end a plain run of a
    /// string — a quote, a backslash or a control character — marked by their high bits. Only
    /// the lowest mark is exact (a borrow can mark a byte above a true one), and it is all the
    /// scan reads.
    @inline(__always) private static func runEnds(in word: UInt64) -> UInt64 {
        let ones: UInt64 = 0x0101_0101_0101_0101
        let quotes = word ^ (ones &* UInt64(UInt8(ascii: "\"")))
        let backslashes = word ^ (ones &* UInt64(UInt8(ascii: "\\")))
        let zeroQuote = (quotes &- ones) & ~quotes
        let zeroBackslash = (backslashes &- ones) & ~backslashes
        let control = (word &- ones &* 0x20) & ~word
        return (zeroQuote | zeroBackslash | control) & (ones &* 0x80)
    }

    /// Reads a string (the opening quote is at `position`) and hands its unescaped UTF-8 bytes to
    /// `deliver`: a slice of the input when it has no escapes, else ``scratch``.
    @inline(__always) private mutating func parseString(_ deliver: (UnsafeBufferPointer<UInt8>) -> Void) throws {
        let start = position &+ 1
        // The common case, a string without escapes: eight bytes at a time to the first quote,
        // backslash or control character, with a local index (not `position`, kept in memory).
        var index = start
        while index &+ 8 <= count {
            let word = UInt64(littleEndian: UnsafeRawPointer(base + index).loadUnaligned(as: UInt64.self))
            let ends = Self.runEnds(in: word)
            if ends != 0 {
                index &+= ends.trailingZeroBitCount &>> 3
                break
            }
            index &+= 8
        }
        while index < count {
            let byte = base[index]
            if byte == UInt8(ascii: "\"") {
                deliver(UnsafeBufferPointer(start: base + start, count: index &- start))
                position = index &+ 1
                return
            }
            if byte == UInt8(ascii: "\\") || byte < 0x20 { break }
            index &+= 1
        }
        position = index
        try parseStringWithEscapes(from: start, deliver)
    }

    /// The rest of ``parseString(_:)`` from its first backslash or control character (at
    /// `position`), or the end of the input.
    @inline(never) private mutating func parseStringWithEscapes(from start: Int, _ deliver: (UnsafeBufferPointer<UInt8>) -> Void) throws {
        guard position < count else { throw error("unterminated string") }
        guard byte(at: position) == UInt8(ascii: "\\") else { throw error("control character in string") }
        scratch.removeAll(keepingCapacity: true)
        scratch.append(contentsOf: UnsafeBufferPointer(start: base + start, count: position - start))
        try parseEscapedRest()
        scratch.withUnsafeBufferPointer { deliver($0) }
    }

    /// Reads the rest of a string from its first backslash (at `position`) into ``scratch``.
    private mutating func parseEscapedRest() throws {
        while position < count {
            let byte = byte(at: position)
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
        guard position < count else { throw error("unterminated escape") }
        let escaped = byte(at: position)
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
                guard position + 1 < count, byte(at: position) == UInt8(ascii: "\\"), byte(at: position + 1) == UInt8(ascii: "u")
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
            guard position < count else { throw error("truncated \\u escape") }
            let byte = byte(at: position)
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

    /// The decimal digit at `index`, or nil past the end or at any other byte.
    @inline(__always) private func digit(at index: Int) -> UInt8? {
        guard index < count else { return nil }
        let digit = base[index] &- UInt8(ascii: "0")
        return digit < 10 ? digit : nil
    }

    private mutating func parseNumber(into sink: inout Sink) throws {
        let start = position
        let negative = byte(at: position) == UInt8(ascii: "-")
        if negative { position &+= 1 }
        guard let first = digit(at: position) else { throw error("invalid number") }
        position &+= 1
        // Accumulated as a negative number, so that Int64.min fits. Eighteen digits always fit;
        // past them every step checks for overflow.
        var magnitude = -Int64(first)
        var overflowed = false
        if first != 0 {
            while let next = digit(at: position) {
                if position &- start < 18 {
                    magnitude = magnitude &* 10 &- Int64(next)
                } else if !overflowed {
                    let (times, overflow1) = magnitude.multipliedReportingOverflow(by: 10)
                    let (sum, overflow2) = times.subtractingReportingOverflow(Int64(next))
                    overflowed = overflow1 || overflow2
                    magnitude = sum
                }
                position &+= 1
            }
        }
        var isInteger = true
        if isAt(UInt8(ascii: ".")) {
            isInteger = false
            position &+= 1
            guard digit(at: position) != nil else { throw error("digits expected after '.'") }
            while digit(at: position) != nil { position &+= 1 }
        }
        if isAt(UInt8(ascii: "e")) || isAt(UInt8(ascii: "E")) {
            isInteger = false
            position &+= 1
            if isAt(UInt8(ascii: "+")) || isAt(UInt8(ascii: "-")) { position &+= 1 }
            guard digit(at: position) != nil else { throw error("digits expected in exponent") }
            while digit(at: position) != nil { position &+= 1 }
        }
        if isInteger, !overflowed {
            if negative {
                sink.integer(magnitude)
                return
            }
            if magnitude != .min {
                sink.integer(-magnitude)
                return
            }
        }
        let text = String(decoding: UnsafeBufferPointer(start: base + start, count: position - start), as: UTF8.self)
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
