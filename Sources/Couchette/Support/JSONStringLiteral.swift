/// JSON string literals (RFC 8259 escaping: quote, backslash and control characters; `/` and
/// non-ASCII characters as they are), written once for the library's JSON writer and the
/// `couchette` tool, whose output scripts parse.
@_spi(Tools) public enum JSONStringLiteral {
    /// `text` as a quoted JSON string.
    public static func make(_ text: String) -> String {
        var output = ""
        append(text, to: &output)
        return output
    }

    /// Appends `text` as a quoted JSON string to `output`.
    public static func append(_ text: String, to output: inout String) {
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
}
