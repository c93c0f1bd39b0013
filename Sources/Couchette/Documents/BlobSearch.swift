import Foundation

/// Finds blobs inside document values: unsaved ``Blob`` objects in a document being saved, and
/// the digests stored bodies reference (for compaction, `check` and replication).
///
/// Every walk is bounded by ``ValueEncoder/maximumDepth``: deeper values cannot be stored anyway.
enum BlobSearch {
    /// A blob met in a stored body: where it sits and what its dictionary says.
    struct Reference: Sendable, Equatable {
        /// Where it sits: a JSON pointer such as `/photos/1/image` for a blob property (what the
        /// `blob_/photos/1/image` attachment name carries), the name for an `_attachments` entry.
        let path: String
        let digest: String
        let length: UInt64?
        let contentType: String?
        /// True for an entry of CouchDB's `_attachments` rather than a blob property.
        let isAttachment: Bool
        /// CouchDB's `revpos`: the generation that introduced the content (nil when unknown).
        let revisionPosition: Int64?
    }

    // MARK: - Caller values

    static func containsBlob(_ array: [Any], depth: Int = 0) -> Bool {
        guard depth <= ValueEncoder.maximumDepth else { return false }
        return array.contains { containsBlob(element: $0, depth: depth + 1) }
    }

    static func containsBlob(_ dictionary: [String: Any], depth: Int = 0) -> Bool {
        guard depth <= ValueEncoder.maximumDepth else { return false }
        return dictionary.values.contains { containsBlob(element: $0, depth: depth + 1) }
    }

    private static func containsBlob(element: Any, depth: Int) -> Bool {
        switch element {
        case is Blob: true
        case let array as [Any]: containsBlob(array, depth: depth)
        case let dictionary as [String: Any]: containsBlob(dictionary, depth: depth)
        default: false
        }
    }

    /// Every ``Blob`` object set in `root` or the containers it holds (not yet encoded ones, which
    /// can only hold stored blob dictionaries).
    static func blobs(in root: MutableDictionaryObject) -> [Blob] {
        var found: [Blob] = []
        collect(root, into: &found, depth: 0)
        return found
    }

    private static func collect(_ container: AnyObject, into found: inout [Blob], depth: Int) {
        guard depth <= ValueEncoder.maximumDepth else { return }
        let slots: [MutableSlot] =
            switch container {
            case let dictionary as MutableDictionaryObject: dictionary.materializedSlots.map { Array($0.values) } ?? []
            case let array as MutableArrayObject: array.slots
            default: []
            }
        for slot in slots {
            switch slot {
            case .blob(let blob): found.append(blob)
            case .dictionary(let child): collect(child, into: &found, depth: depth + 1)
            case .array(let child): collect(child, into: &found, depth: depth + 1)
            case .value, .encoded, .invalid: break
            }
        }
    }

    // MARK: - Stored bodies

    /// The blobs a stored body references: blob dictionaries anywhere (in encoded order, arrays
    /// in element order) and the entries of a top-level `_attachments`.
    static func references(in body: EncodedValue) -> [Reference] {
        var found: [Reference] = []
        walk(body, path: "", into: &found)
        if let attachments = body.value(forKey: "_attachments"), attachments.isDictionary {
            attachments.forEachEntry { name, entry in
                guard let digest = entry.value(forKey: Blob.Key.digest)?.string else { return }
                found.append(
                    Reference(
                        path: name, digest: digest, length: length(entry),
                        contentType: entry.value(forKey: Blob.Key.contentType)?.string, isAttachment: true,
                        revisionPosition: entry.value(forKey: Blob.Key.revpos)?.integer))
            }
        }
        return found
    }

    /// The digests `body` references.
    static func digests(in body: [UInt8]) -> [String] {
        references(in: EncodedValue(bytes: body)).map(\.digest)
    }

    private static func walk(_ value: EncodedValue, path: String, into found: inout [Reference]) {
        if value.isDictionary {
            if let reference = blobReference(value, path: path) {
                found.append(reference)
                return
            }
            value.forEachEntry { key, child in
                if path.isEmpty && key == "_attachments" { return }
                walk(child, path: path + "/" + pointerToken(key), into: &found)
            }
        } else if value.isArray {
            for index in 0..<value.count {
                if let child = value.element(at: index) { walk(child, path: path + "/\(index)", into: &found) }
            }
        }
    }

    /// A key as a JSON-pointer token (RFC 6901: `~` → `~0`, `/` → `~1`).
    static func pointerToken(_ key: String) -> String {
        key.replacingOccurrences(of: "~", with: "~0").replacingOccurrences(of: "/", with: "~1")
    }

    /// The value at a JSON pointer (`/a/0/b`) in `root`, or nil.
    static func value(at pointer: String, in root: Value) -> Value? {
        guard pointer.hasPrefix("/") else { return nil }
        var current = root
        for token in pointer.dropFirst().split(separator: "/", omittingEmptySubsequences: false) {
            let key = token.replacingOccurrences(of: "~1", with: "/").replacingOccurrences(of: "~0", with: "~")
            switch current {
            case .dictionary(let entries): guard let next = entries[key] else { return nil }; current = next
            case .array(let elements):
                guard let index = Int(key), elements.indices.contains(index) else { return nil }; current = elements[index]
            default: return nil
            }
        }
        return current
    }

    /// The reference of a blob dictionary (`@type: "blob"` and a string digest), else nil.
    static func blobReference(_ value: EncodedValue, path: String) -> Reference? {
        guard value.value(forKey: Blob.Key.type)?.string == Blob.typeName,
            let digest = value.value(forKey: Blob.Key.digest)?.string
        else { return nil }
        return Reference(
            path: path, digest: digest, length: length(value),
            contentType: value.value(forKey: Blob.Key.contentType)?.string, isAttachment: false,
            revisionPosition: value.value(forKey: Blob.Key.revpos)?.integer)
    }

    private static func length(_ value: EncodedValue) -> UInt64? {
        guard let number = value.value(forKey: Blob.Key.length)?.integer, number >= 0 else { return nil }
        return UInt64(number)
    }
}
