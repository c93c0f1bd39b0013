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

/// A strict JSON (RFC 8259) reader over UTF-8 bytes, generic over what it builds (``Value``s:
/// ``ValueSink``; JSON text goes to the binary format through ``BinarySink``, which reads with the
/// same ``JSONText`` pieces).
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
            throw JSONText.error("unexpected end of input", at: 0)
        }
        var parser = JSONParser(base: base, count: utf8.count)
        parser.skipWhitespace()
        try parser.parseValue(depth: 0, into: &sink)
        parser.skipWhitespace()
        guard parser.position == parser.count else { throw parser.error("unexpected text after the JSON value") }
    }

    /// An error naming the current position as the first bad byte.
    private func error(_ problem: String) -> CouchetteError {
        JSONText.error(problem, at: position)
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

    private mutating func skipWhitespaceRun() {
        position = JSONText.whitespaceEnd(base, count: count, from: position)
    }

    private mutating func parseValue(depth: Int, into sink: inout Sink) throws {
        guard depth < JSON.maximumDepth else { throw JSONText.nestingError(at: position) }
        guard position < count else { throw error("unexpected end of input") }
        switch byte(at: position) {
        case UInt8(ascii: "\""): try parseString { sink.string($0) }
        case UInt8(ascii: "{"): try parseObject(depth: depth, into: &sink)
        case UInt8(ascii: "["): try parseArray(depth: depth, into: &sink)
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): try parseNumber(into: &sink)
        case UInt8(ascii: "t"): try expect("true"); sink.bool(true)
        case UInt8(ascii: "f"): try expect("false"); sink.bool(false)
        case UInt8(ascii: "n"): try expect("null"); sink.null()
        default: throw JSONText.unexpectedCharacter(byte(at: position), at: position)
        }
    }

    private mutating func expect(_ word: StaticString) throws {
        position = try JSONText.literalEnd(word, base, count: count, at: position)
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

    /// Reads a string (the opening quote is at `position`) and hands its unescaped UTF-8 bytes to
    /// `deliver`: a slice of the input when it has no escapes, else ``scratch``.
    @inline(__always) private mutating func parseString(_ deliver: (UnsafeBufferPointer<UInt8>) -> Void) throws {
        let start = position &+ 1
        let stop = JSONText.plainRunEnd(base, count: count, from: start)
        if stop < count && base[stop] == UInt8(ascii: "\"") {
            deliver(UnsafeBufferPointer(start: base + start, count: stop &- start))
            position = stop &+ 1
            return
        }
        position = try JSONText.unescape(base, count: count, start: start, stop: stop, into: &scratch)
        scratch.withUnsafeBufferPointer { deliver($0) }
    }

    private mutating func parseNumber(into sink: inout Sink) throws {
        if let (integer, end) = JSONText.plainInteger(base, count: count, at: position) {
            position = end
            sink.integer(integer)
            return
        }
        let (number, end) = try JSONText.number(base, count: count, at: position)
        position = end
        switch number {
        case .integer(let integer): sink.integer(integer)
        case .double(let double): sink.double(double)
        case .largeInteger(let large): sink.largeInteger(large)
        }
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
