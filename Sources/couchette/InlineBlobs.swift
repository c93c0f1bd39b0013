import Couchette
import Foundation

/// `export --with-blobs` and `import`: blob contents inlined as base64 in a `data` field of the
/// blob dictionary (Couchbase Lite's form for inline blob content), and read back into blobs.
enum InlineBlobs {
    /// Nesting deeper than documents may be is not walked (it cannot have been stored).
    private static let maximumDepth = 200

    /// `value` with every blob dictionary given a `data` field holding its content in base64.
    /// - Throws: a ``ToolError`` naming the blob whose content this database does not hold.
    static func inlined(_ value: Any, in database: Database, path: String = "", depth: Int = 0) async throws -> Any {
        guard depth < maximumDepth else { return value }
        switch value {
        case let dictionary as [String: Any]:
            if Blob.isBlob(properties: dictionary) {
                guard let blob = try await database.getBlob(properties: dictionary) else {
                    throw ToolError("the content of blob '\(path)' (\(dictionary["digest"] ?? "")) is missing from the database")
                }
                var result = dictionary
                result["data"] = try await blob.content().base64EncodedString()
                return result
            }
            var result: [String: Any] = [:]
            for (key, child) in dictionary {
                result[key] = try await inlined(child, in: database, path: path.isEmpty ? key : path + "." + key, depth: depth + 1)
            }
            return result
        case let array as [Any]:
            var result: [Any] = []
            for (index, child) in array.enumerated() {
                result.append(try await inlined(child, in: database, path: path + "[\(index)]", depth: depth + 1))
            }
            return result
        default:
            return value
        }
    }

    /// Replaces every blob dictionary of `document` that has a base64 `data` field with a blob of
    /// that content (stored when the document is saved).
    /// - Throws: a ``ToolError`` for data that is not base64, or content that does not match the
    ///   dictionary's `sha1-` digest or length.
    static func restore(in document: MutableDocument) throws {
        for key in document.keys {
            if let blob = try blob(document.value(forKey: key), path: key) {
                document.setBlob(blob, forKey: key)
            } else {
                try restore(document.value(forKey: key), path: key, depth: 1)
            }
        }
    }

    private static func restore(_ container: Any?, path: String, depth: Int) throws {
        guard depth < maximumDepth else { return }
        if let dictionary = container as? MutableDictionaryObject {
            for key in dictionary.keys {
                let childPath = path + "." + key
                if let blob = try blob(dictionary.value(forKey: key), path: childPath) {
                    dictionary.setBlob(blob, forKey: key)
                } else {
                    try restore(dictionary.value(forKey: key), path: childPath, depth: depth + 1)
                }
            }
        } else if let array = container as? MutableArrayObject {
            for index in 0..<array.count {
                let childPath = path + "[\(index)]"
                if let blob = try blob(array.value(at: index), path: childPath) {
                    try array.setBlob(blob, at: index)
                } else {
                    try restore(array.value(at: index), path: childPath, depth: depth + 1)
                }
            }
        }
    }

    /// The blob an inline blob dictionary holds, or nil for anything else.
    private static func blob(_ value: Any?, path: String) throws -> Blob? {
        guard let dictionary = value as? MutableDictionaryObject, dictionary.string(forKey: "@type") == "blob",
            let text = dictionary.string(forKey: "data")
        else { return nil }
        guard let data = Data(base64Encoded: text) else { throw ToolError("blob '\(path)': 'data' is not base64") }
        if dictionary.contains(key: "length"), dictionary.int64(forKey: "length") != Int64(data.count) {
            throw ToolError("blob '\(path)': 'data' has \(data.count) bytes, 'length' says \(dictionary.int64(forKey: "length"))")
        }
        return Blob(contentType: dictionary.string(forKey: "content_type") ?? "application/octet-stream", data: data)
    }
}
