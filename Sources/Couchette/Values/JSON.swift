/// JSON text to and from ``Value``, without Foundation, so integers keep all 64 bits.
///
/// Output is compact: no spaces, `/` not escaped, non-ASCII characters written as UTF-8. Numbers
/// are written as CouchDB 3 writes them, so a body reads the same from either (see
/// ``writeDouble(_:to:)``): integers as digits (any size), doubles always as doubles.
enum JSON {
    /// Shared with the binary encoding, so any JSON that parses can be stored.
    static let maximumDepth = ValueEncoder.maximumDepth

    // MARK: - Writing

    /// How doubles are written.
    enum DoubleStyle {
        /// As CouchDB writes them, always as doubles (`1.0`): document bodies, the listener,
        /// replication (see ``writeDouble(_:to:)``).
        case couchDB
        /// As Couchbase Lite writes query results: a whole double below 10^15 without a
        /// fraction (`2.0` as `2`), others in Swift's shortest round-trip form.
        case couchbaseLite
    }

    static func string(from value: Value, doubles style: DoubleStyle = .couchDB) -> String {
        var output = ""
        write(value, to: &output, doubles: style)
        return output
    }

    static func write(_ value: Value, to output: inout String, doubles style: DoubleStyle = .couchDB) {
        switch value {
        case .null: output += "null"
        case .bool(let flag): output += flag ? "true" : "false"
        case .int(let number): output += String(number)
        case .double(let number):
            switch style {
            case .couchDB: writeDouble(number, to: &output)
            case .couchbaseLite: writeQueryDouble(number, to: &output)
            }
        case .largeInteger(let number): output += number.text
        case .string(let text): writeString(text, to: &output)
        case .array(let elements):
            output += "["
            for (index, element) in elements.enumerated() {
                if index > 0 { output += "," }
                write(element, to: &output, doubles: style)
            }
            output += "]"
        case .dictionary(let entries):
            output += "{"
            let sorted = entries.sorted { $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) }
            for (index, entry) in sorted.enumerated() {
                if index > 0 { output += "," }
                writeString(entry.key, to: &output)
                output += ":"
                write(entry.value, to: &output, doubles: style)
            }
            output += "}"
        }
    }

    /// A double in CouchDB's form: its shortest round-trip digits, in plain notation for decimal
    /// exponents -6...20 and with a `.0` when that has no fraction (`1.0`, `25000000000.0`,
    /// `0.000001`), else in exponent notation with a signed exponent (`1e+300`, `1e-7`,
    /// `1.5e+21`); zero is `0.0` whatever its sign. (Apache CouchDB 3.5 answered exactly these for
    /// `1.0`, `2.5E+10`, `1e300`, `1e-7`, `-0.0`: transcript a18.) Infinities and NaN, which JSON
    /// cannot hold, are `null`.
    static func writeDouble(_ number: Double, to output: inout String) {
        guard number.isFinite else {
            output += "null"
            return
        }
        guard number != 0 else {
            output += "0.0"
            return
        }
        // Swift's description has the shortest round-trip digits, and between 10^-3 and 10^15
        // (where it never uses an exponent) it is already CouchDB's layout: `0.001`, `2.5`,
        // `25000000000.0`. Other magnitudes are laid out again.
        let magnitude = number.magnitude
        if magnitude >= 1e-3 && magnitude < 1e15 {
            output += number.description
            return
        }
        let (digits, pointPosition) = shortestDigits(magnitude)
        var text = number < 0 ? "-" : ""
        let exponent = pointPosition - 1
        if exponent >= -6 && exponent < 21 {
            if pointPosition <= 0 {
                text += "0." + String(repeating: "0", count: -pointPosition) + digits
            } else if pointPosition >= digits.count {
                text += digits + String(repeating: "0", count: pointPosition - digits.count) + ".0"
            } else {
                let split = digits.index(digits.startIndex, offsetBy: pointPosition)
                text += digits[..<split] + "." + digits[split...]
            }
        } else {
            text += String(digits.prefix(1))
            if digits.count > 1 { text += "." + digits.dropFirst() }
            text += (exponent < 0 ? "e-" : "e+") + String(exponent.magnitude)
        }
        output += text
    }

    static func writeQueryDouble(_ number: Double, to output: inout String) {
        guard number.isFinite else {
            output += "null"
            return
        }
        if number == number.rounded(), abs(number) < 1e15 {
            output += String(Int64(number))
        } else {
            output += "\(number)"
        }
    }

    /// The significant digits of a positive finite double (no leading or trailing zeros) and
    /// where the decimal point goes: value = 0.digits × 10^pointPosition.
    private static func shortestDigits(_ number: Double) -> (digits: String, pointPosition: Int) {
        let description = number.description
        var mantissa = Substring(description)
        var exponent = 0
        if let e = description.firstIndex(where: { $0 == "e" || $0 == "E" }) {
            mantissa = description[..<e]
            exponent = Int(description[description.index(after: e)...]) ?? 0
        }
        let point = mantissa.firstIndex(of: ".")
        let integerPart = point.map { mantissa[..<$0] } ?? mantissa
        let fraction = point.map { mantissa[mantissa.index(after: $0)...] } ?? ""
        var digits = Array(integerPart + fraction)
        var pointPosition = integerPart.count + exponent
        while digits.first == "0" {
            digits.removeFirst()
            pointPosition -= 1
        }
        while digits.last == "0" { digits.removeLast() }
        return (String(digits), pointPosition)
    }

    static func writeString(_ text: String, to output: inout String) {
        JSONStringLiteral.append(text, to: &output)
    }

    // MARK: - Parsing

    /// Parses one JSON value; throws `.invalidParameter` with the byte offset of the first problem.
    static func parse(_ text: String) throws -> Value {
        var sink = ValueSink()
        try JSONParser.parse(text, into: &sink)
        return sink.result
    }

    /// Parses one JSON value straight into the binary format (see ``ValueTag``), without building
    /// ``Value``s: the fast path for every JSON document coming in (``MutableDocument`` from JSON,
    /// import). Same errors as ``parse(_:)``; gives exactly the bytes of encoding what
    /// ``parse(_:)`` returns, except that keys are told apart by their bytes (canonically
    /// equivalent keys stay two keys, as in Couchbase Lite).
    static func encodeBinary(_ text: String) throws -> [UInt8] {
        var text = text
        return try text.withUTF8 { try encodeBinary(utf8: $0) }
    }

    /// ``encodeBinary(_:)`` over UTF-8 bytes, read in place.
    static func encodeBinary(utf8: UnsafeBufferPointer<UInt8>) throws -> [UInt8] {
        try BinarySink.transcode(utf8)  // refuses text over `maximumBinaryInput`
    }

    /// The largest JSON text ``encodeBinary(_:)`` accepts: 512 MiB.
    static let maximumBinaryInput = 1 << 29
}
