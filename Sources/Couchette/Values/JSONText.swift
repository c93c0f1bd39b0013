/// The pieces of reading JSON text that ``JSONParser`` (text to ``Value``) and ``BinarySink``
/// (text to the binary format) share, so both accept exactly the same text and fail with the same
/// messages at the same offsets.
///
/// Each reads UTF-8 bytes in place: `count` bytes from `base`, every read at an index checked
/// against `count` first.
enum JSONText {
    /// `.invalidParameter` naming `offset` as the first bad byte.
    static func error(_ problem: String, at offset: Int) -> CouchetteError {
        CouchetteError(.invalidParameter, "invalid JSON at byte \(offset): \(problem)")
    }

    static func nestingError(at offset: Int) -> CouchetteError {
        error("nesting deeper than \(JSON.maximumDepth) levels", at: offset)
    }

    static func unexpectedCharacter(_ byte: UInt8, at offset: Int) -> CouchetteError {
        error("unexpected character '\(Character(Unicode.Scalar(byte)))'", at: offset)
    }

    /// The index of the first byte at or after `start` that is not JSON whitespace (at most
    /// `count`). Out of line: compact JSON has none, which one inline comparison settles.
    @inline(never) static func whitespaceEnd(_ base: UnsafePointer<UInt8>, count: Int, from start: Int) -> Int {
        var index = start
        while index < count {
            switch base[index] {
            case 0x20, 0x0A, 0x0D, 0x09: index &+= 1
            default: return index
            }
        }
        return index
    }

    // MARK: - Literals

    /// The end of `word` (`true`, `false` or `null`), which must start at `start`.
    @inline(__always) static func literalEnd(_ word: StaticString, _ base: UnsafePointer<UInt8>, count: Int, at start: Int) throws -> Int {
        let length = word.utf8CodeUnitCount
        let end = start &+ length
        // Each word has at least four bytes: one load compares them, and `false` its fifth.
        guard end <= count,
            UnsafeRawPointer(base + start).loadUnaligned(as: UInt32.self)
                == UnsafeRawPointer(word.utf8Start).loadUnaligned(as: UInt32.self),
            length == 4 || base[start &+ 4] == word.utf8Start[4]
        else { throw error("expected '\(word)'", at: start) }
        return end
    }

    // MARK: - Strings

    /// The bytes of `word` (eight input bytes, the first lowest) that end a plain run of a
    /// string — a quote, a backslash or a control character — marked by their high bits. Only
    /// the lowest mark is exact (a borrow can mark a byte above a true one), and it is all the
    /// scan reads.
    @inline(__always) static func runEnds(in word: UInt64) -> UInt64 {
        let ones: UInt64 = 0x0101_0101_0101_0101
        let quotes = word ^ (ones &* UInt64(UInt8(ascii: "\"")))
        let backslashes = word ^ (ones &* UInt64(UInt8(ascii: "\\")))
        let zeroQuote = (quotes &- ones) & ~quotes
        let zeroBackslash = (backslashes &- ones) & ~backslashes
        let control = (word &- ones &* 0x20) & ~word
        return (zeroQuote | zeroBackslash | control) & (ones &* 0x80)
    }

    /// The index of the first quote, backslash or control byte at or after `start` (at most
    /// `count`: none before the end), found eight bytes at a time.
    @inline(__always) static func plainRunEnd(_ base: UnsafePointer<UInt8>, count: Int, from start: Int) -> Int {
        var index = start
        while index &+ 8 <= count {
            let ends = runEnds(in: UInt64(littleEndian: UnsafeRawPointer(base + index).loadUnaligned(as: UInt64.self)))
            if ends != 0 { return index &+ ends.trailingZeroBitCount &>> 3 }
            index &+= 8
        }
        guard index < count else { return count }
        // Fewer than eight bytes are left: the last eight of the input, shifted so that `index`'s
        // byte is lowest. Zero bytes come in above the end and read as control bytes, so a run
        // reaching the end stops at `count` or later.
        guard count >= 8 else { return plainRunEndByBytes(base, count: count, from: index) }
        let tail = UInt64(littleEndian: UnsafeRawPointer(base + (count &- 8)).loadUnaligned(as: UInt64.self))
        let ends = runEnds(in: tail &>> UInt64((index &- (count &- 8)) &<< 3))
        return min(index &+ ends.trailingZeroBitCount &>> 3, count)
    }

    /// ``plainRunEnd(_:count:from:)`` in an input shorter than eight bytes.
    @inline(never) private static func plainRunEndByBytes(_ base: UnsafePointer<UInt8>, count: Int, from start: Int) -> Int {
        var index = start
        while index < count {
            let byte = base[index]
            if byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") || byte < 0x20 { break }
            index &+= 1
        }
        return index
    }

    /// Reads the rest of a string whose plain run from `start` stopped at `stop` (see
    /// ``plainRunEnd(_:count:from:)``) short of its closing quote: puts its unescaped bytes in
    /// `scratch` and returns the index after the closing quote.
    @inline(never) static func unescape(
        _ base: UnsafePointer<UInt8>, count: Int, start: Int, stop: Int, into scratch: inout [UInt8]
    ) throws -> Int {
        guard stop < count else { throw error("unterminated string", at: count) }
        guard base[stop] == UInt8(ascii: "\\") else { throw error("control character in string", at: stop) }
        scratch.removeAll(keepingCapacity: true)
        scratch.append(contentsOf: UnsafeBufferPointer(start: base + start, count: stop - start))
        var position = stop
        while position < count {
            let byte = base[position]
            position += 1
            switch byte {
            case UInt8(ascii: "\""):
                return position
            case UInt8(ascii: "\\"):
                try unescapeOne(base, count: count, position: &position, into: &scratch)
            case 0x00..<0x20:
                throw error("control character in string", at: position - 1)
            default:
                scratch.append(byte)
            }
        }
        throw error("unterminated string", at: position)
    }

    /// Appends what the escape after a backslash (at `position` - 1) stands for.
    private static func unescapeOne(_ base: UnsafePointer<UInt8>, count: Int, position: inout Int, into scratch: inout [UInt8]) throws {
        let escapeStart = position - 1
        guard position < count else { throw error("unterminated escape", at: position) }
        let escaped = base[position]
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
            var scalar = try hex4(base, count: count, position: &position)
            if (0xD800..<0xDC00).contains(scalar) {
                guard position + 1 < count, base[position] == UInt8(ascii: "\\"), base[position + 1] == UInt8(ascii: "u")
                else { throw error("lone surrogate", at: escapeStart) }
                position += 2
                let low = try hex4(base, count: count, position: &position)
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

    private static func hex4(_ base: UnsafePointer<UInt8>, count: Int, position: inout Int) throws -> UInt32 {
        var scalar: UInt32 = 0
        for _ in 0..<4 {
            guard position < count else { throw error("truncated \\u escape", at: position) }
            let byte = base[position]
            let digit: UInt32
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = UInt32(byte - UInt8(ascii: "0"))
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = UInt32(byte - UInt8(ascii: "a") + 10)
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = UInt32(byte - UInt8(ascii: "A") + 10)
            default: throw error("invalid hex digit in \\u escape", at: position)
            }
            position += 1
            scalar = scalar << 4 | digit
        }
        return scalar
    }

    // MARK: - Numbers

    /// A number literal's value: integers stay integers (beyond 64 bits as ``LargeInteger``);
    /// a fraction or an exponent makes a double.
    enum Number {
        case integer(Int64)
        case double(Double)
        case largeInteger(LargeInteger)
    }

    /// The common number, an integer of at most 18 digits without fraction or exponent, which
    /// starts at `start` (at a `-` or a digit): its value and the index after it; nil for any
    /// other number, and for text that is no number (``number(_:count:at:)`` reads both).
    @inline(__always) static func plainInteger(_ base: UnsafePointer<UInt8>, count: Int, at start: Int) -> (Int64, Int)? {
        let negative = base[start] == UInt8(ascii: "-")
        var index = negative ? start &+ 1 : start
        guard index < count else { return nil }
        let first = base[index] &- UInt8(ascii: "0")
        guard first < 10 else { return nil }
        index &+= 1
        var magnitude = Int64(first)
        if first != 0 {
            // Eighteen digits always fit; a longer literal goes the careful way.
            let last = min(count, index &+ 17)
            while index < last {
                let digit = base[index] &- UInt8(ascii: "0")
                guard digit < 10 else { break }
                magnitude = magnitude &* 10 &+ Int64(digit)
                index &+= 1
            }
        }
        if index < count {
            let next = base[index]
            if next &- UInt8(ascii: "0") < 10 || next == UInt8(ascii: ".") || next | 0x20 == UInt8(ascii: "e") { return nil }
        }
        return (negative ? 0 &- magnitude : magnitude, index)
    }

    /// Reads any number literal starting at `start` (at a `-` or a digit): its value and the
    /// index after it. A literal beyond Double's range is an error, as in CouchDB.
    @inline(never) static func number(_ base: UnsafePointer<UInt8>, count: Int, at start: Int) throws -> (Number, Int) {
        func digit(at index: Int) -> UInt8? {
            guard index < count else { return nil }
            let digit = base[index] &- UInt8(ascii: "0")
            return digit < 10 ? digit : nil
        }
        func isAt(_ index: Int, _ expected: UInt8) -> Bool { index < count && base[index] == expected }
        var position = start
        let negative = base[position] == UInt8(ascii: "-")
        if negative { position += 1 }
        guard let first = digit(at: position) else { throw error("invalid number", at: position) }
        position += 1
        // Accumulated as a negative number, so that Int64.min fits; every step checks for overflow.
        var magnitude = -Int64(first)
        var overflowed = false
        if first != 0 {
            while let next = digit(at: position) {
                if !overflowed {
                    let (times, overflow1) = magnitude.multipliedReportingOverflow(by: 10)
                    let (sum, overflow2) = times.subtractingReportingOverflow(Int64(next))
                    overflowed = overflow1 || overflow2
                    magnitude = sum
                }
                position += 1
            }
        }
        var isInteger = true
        if isAt(position, UInt8(ascii: ".")) {
            isInteger = false
            position += 1
            guard digit(at: position) != nil else { throw error("digits expected after '.'", at: position) }
            while digit(at: position) != nil { position += 1 }
        }
        if isAt(position, UInt8(ascii: "e")) || isAt(position, UInt8(ascii: "E")) {
            isInteger = false
            position += 1
            if isAt(position, UInt8(ascii: "+")) || isAt(position, UInt8(ascii: "-")) { position += 1 }
            guard digit(at: position) != nil else { throw error("digits expected in exponent", at: position) }
            while digit(at: position) != nil { position += 1 }
        }
        if isInteger, !overflowed {
            if negative { return (.integer(magnitude), position) }
            if magnitude != .min { return (.integer(-magnitude), position) }
        }
        let text = String(decoding: UnsafeBufferPointer(start: base + start, count: position - start), as: UTF8.self)
        if isInteger, let large = LargeInteger(text: text) { return (.largeInteger(large), position) }
        guard let number = Double(text), number.isFinite else { throw error("number \(text) out of range", at: start) }
        return (.double(number), position)
    }
}
