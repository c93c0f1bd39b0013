@_spi(Tools) import Couchette
import Foundation

/// JSON text for the values the library hands out, written the way ``QueryResult/toJSON()``
/// writes them: compact, integers without a decimal point, doubles in shortest round-trip form,
/// `/` not escaped. Scripts parse this output, so it stays stable.
enum JSONText {
    /// `value` as JSON; nil (MISSING) as `null`.
    static func encode(_ value: Any?) -> String {
        switch value {
        case nil, is NSNull: return "null"
        case let flag as Bool: return flag ? "true" : "false"
        case let number as Int: return String(number)
        case let number as Int64: return String(number)
        case let number as UInt64: return String(number)
        case let number as Double: return number.isFinite ? "\(number)" : "null"
        case let number as Float: return Double(number).isFinite ? "\(Double(number))" : "null"
        case let number as Decimal: return number.description  // an integer beyond Int64, every digit
        case let text as String: return string(text)
        case let dictionary as DictionaryObject: return dictionary.toJSON()
        case let array as ArrayObject: return array.toJSON()
        case let dictionary as MutableDictionaryObject: return dictionary.toJSON()
        case let array as MutableArrayObject: return array.toJSON()
        case let date as Date: return string(ISO8601DateFormatter().string(from: date))
        case let array as [Any]: return "[" + array.map(encode).joined(separator: ",") + "]"
        case let dictionary as [String: Any]:
            let entries = dictionary.keys.sorted().map { string($0) + ":" + encode(dictionary[$0]) }
            return "{" + entries.joined(separator: ",") + "}"
        case let number as NSNumber: return number.stringValue
        default: return string(String(describing: value!))
        }
    }

    /// A JSON string literal, escaped as the library escapes its own JSON.
    static func string(_ text: String) -> String {
        JSONStringLiteral.make(text)
    }

    /// A document as one JSON object: `_id` and `_rev` first, then its properties.
    static func document(id: String, revisionID: String?, body: String) -> String {
        var output = "{\"_id\":" + string(id)
        if let revisionID { output += ",\"_rev\":" + string(revisionID) }
        let properties = body.dropFirst().dropLast()
        if !properties.isEmpty { output += "," + properties }
        return output + "}"
    }

    /// Parses one JSON value (any type, not only objects) with the library's parser, keeping
    /// integers and doubles apart.
    static func parseValue(_ text: String) throws -> Any? {
        let holder = try MutableDocument(id: "value", json: "{\"v\":" + text + "\n}")
        guard holder.count == 1, holder.contains(key: "v") else {
            throw ToolError("not a single JSON value: \(text)")
        }
        return holder.value(forKey: "v")
    }
}
