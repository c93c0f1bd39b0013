/// JSON text to and from ``Value``, without Foundation, so integers keep all 64 bits.
///
/// Output is compact: no spaces, `/` not escaped, non-ASCII characters written as UTF-8, integers
/// without a decimal point and doubles in their shortest round-trip form.
enum JSON {
    /// Shared with the binary encoding, so any JSON that parses can be stored.
    static let maximumDepth = ValueEncoder.maximumDepth

    // MARK: - Writing

    static func string(from value: Value) -> String {
        var output = ""
        write(value, to: &output)
        return output
    }

    static func write(_ value: Value, to output: inout String) {
        switch value {
        case .null: output += "null"
        case .bool(let flag): output += flag ? "true" : "false"
        case .int(let number): output += String(number)
        case .double(let number): writeDouble(number, to: &output)
        case .string(let text): writeString(text, to: &output)
        case .array(let elements):
            output += "["
            for (index, element) in elements.enumerated() {
                if index > 0 { output += "," }
                write(element, to: &output)
            }
            output += "]"
        case .dictionary(let entries):
            output += "{"
            let sorted = entries.sorted { $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) }
            for (index, entry) in sorted.enumerated() {
                if index > 0 { output += "," }
                writeString(entry.key, to: &output)
                output += ":"
                write(entry.value, to: &output)
            }
            output += "}"
        }
    }

    static func writeDouble(_ number: Double, to output: inout String) {
        guard number.isFinite else {
            output += "null"
            return
        }
        if number == number.rounded(), abs(number) < 1e15 {
            output += String(Int64(number))  // 2.0 prints as 2, as Couchbase Lite does
        } else {
            output += "\(number)"
        }
    }

    static func writeString(_ text: String, to output: inout String) {
        output += "\""
        // Most strings need no escaping: append them whole instead of scalar by scalar.
        if !text.utf8.contains(where: { $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") || $0 < 0x20 }) {
            output += text
            output += "\""
            return
        }
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": output += "\\\""
            case "\\": output += "\\\\"
            case "\n": output += "\\n"
            case "\r": output += "\\r"
            case "\t": output += "\\t"
            case "\u{08}": output += "\\b"
            case "\u{0C}": output += "\\f"
            case _ where scalar.value < 0x20:
                let hex = String(scalar.value, radix: 16)
                output += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: output.unicodeScalars.append(scalar)
            }
        }
        output += "\""
    }

    // MARK: - Parsing

    /// Parses one JSON value; throws `.invalidParameter` with the byte offset of the first problem.
    static func parse(_ text: String) throws -> Value {
        var sink = ValueSink()
        try JSONParser.parse(text, into: &sink)
        return sink.result
    }

    /// Parses one JSON value straight into the binary format (see ``ValueTag``), without building
    /// ``Value``s: the fast path for importing JSON documents. Same errors as ``parse(_:)``.
    static func encodeBinary(_ text: String) throws -> [UInt8] {
        var sink = BinarySink()
        try JSONParser.parse(text, into: &sink)
        return sink.encoder.bytes
    }
}
