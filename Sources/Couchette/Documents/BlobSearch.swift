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

    // Every save walks its document: the slots are read where they lie (a `for` over the entries
    // would copy each one, key and value, ~200 instructions apiece), and each container is
    // walked by its own type (a cast from `AnyObject` costs more than a document's walk).
    private static func collect(_ dictionary: MutableDictionaryObject, into found: inout [Blob], depth: Int) {
        guard depth <= ValueEncoder.maximumDepth else { return }
        dictionary.changedEntries.withUnsafeBufferPointer { entries in
            for index in entries.indices { collect(entries[index].slot?.held, into: &found, depth: depth) }
        }
    }

    private static func collect(_ array: MutableArrayObject, into found: inout [Blob], depth: Int) {
        guard depth <= ValueEncoder.maximumDepth else { return }
        array.slots.withUnsafeBufferPointer { slots in
            for index in slots.indices { collect(slots[index].held, into: &found, depth: depth) }
        }
    }

    /// Collects what one slot of a container at `depth` holds.
    private static func collect(_ held: MutableSlot.Held?, into found: inout [Blob], depth: Int) {
        switch held {
        case .blob(let blob)?: found.append(blob)
        case .dictionary(let child)?: collect(child, into: &found, depth: depth + 1)
        case .array(let child)?: collect(child, into: &found, depth: depth + 1)
        case .unstorable?, nil: break
        }
    }

    // MARK: - Stored bodies

    /// The blobs a stored body references: blob dictionaries anywhere (in encoded order, arrays
    /// in element order) and the entries of a top-level `_attachments`.
    static func references(in body: EncodedValue) -> [Reference] {
        // Replication asks this of every document it moves, and almost none hold a blob: a byte
        // scan for the one key every reference needs spares them the walk, which decodes every key.
        guard mayHoldDigestKey(body) else { return [] }
        var found: [Reference] = []
        var path: [PathStep] = []
        walk(body, path: &path, into: &found)
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

    /// The encoded form of the key `digest`: its varint length, then its UTF-8 bytes.
    private static let encodedDigestKey: [UInt8] = [6] + Array("digest".utf8)

    /// False when no dictionary in `value` has a `digest` key (so it references no blob or
    /// attachment): lets a puller skip encoding a body just to look for references. Bounded by the
    /// encoder's nesting limit (deeper answers true and leaves the verdict to the encoder).
    static func mayHoldReference(_ value: Value, depth: Int = 0) -> Bool {
        guard depth < ValueEncoder.maximumDepth else { return true }
        switch value {
        case .dictionary(let entries):
            return entries["digest"] != nil || entries.values.contains { mayHoldReference($0, depth: depth + 1) }
        case .array(let elements):
            return elements.contains { mayHoldReference($0, depth: depth + 1) }
        default:
            return false
        }
    }

    /// False when no key `digest` can be in `value`'s bytes (a string value spelled so only makes
    /// it answer true needlessly).
    private static func mayHoldDigestKey(_ value: EncodedValue) -> Bool {
        let key = encodedDigestKey
        return value.bytes.withUnsafeBufferPointer { bytes in
            guard bytes.count >= key.count else { return false }
            var index = max(0, value.offset)
            let last = bytes.count - key.count
            search: while index <= last {
                defer { index += 1 }
                guard bytes[index] == key[0] else { continue }
                for position in 1..<key.count where bytes[index + position] != key[position] { continue search }
                return true
            }
            return false
        }
    }

    /// One step of the way from the body's root to a value: kept unescaped while walking, and
    /// turned into a JSON pointer only for a blob found.
    private enum PathStep {
        case key(String)
        case index(Int)
    }

    private static func pointer(_ path: [PathStep]) -> String {
        path.map { step in
            switch step {
            case .key(let key): "/" + pointerToken(key)
            case .index(let index): "/\(index)"
            }
        }.joined()
    }

    private static func walk(_ value: EncodedValue, path: inout [PathStep], into found: inout [Reference]) {
        if value.isDictionary {
            if let reference = blobReference(value, path: { pointer(path) }) {
                found.append(reference)
                return
            }
            let atRoot = path.isEmpty
            value.forEachEntry { key, child in
                if atRoot && key == "_attachments" { return }
                path.append(.key(key))
                walk(child, path: &path, into: &found)
                path.removeLast()
            }
        } else if value.isArray {
            for index in 0..<value.count {
                guard let child = value.element(at: index) else { continue }
                path.append(.index(index))
                walk(child, path: &path, into: &found)
                path.removeLast()
            }
        }
    }

    /// A key as a JSON-pointer token (RFC 6901: `~` → `~0`, `/` → `~1`).
    static func pointerToken(_ key: String) -> String {
        guard key.utf8.contains(where: { $0 == UInt8(ascii: "~") || $0 == UInt8(ascii: "/") }) else { return key }
        return key.replacingOccurrences(of: "~", with: "~0").replacingOccurrences(of: "/", with: "~1")
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
    /// `path` is asked for only when `value` is a blob dictionary.
    private static func blobReference(_ value: EncodedValue, path: () -> String) -> Reference? {
        guard value.value(forKey: Blob.Key.type)?.string == Blob.typeName,
            let digest = value.value(forKey: Blob.Key.digest)?.string
        else { return nil }
        return Reference(
            path: path(), digest: digest, length: length(value),
            contentType: value.value(forKey: Blob.Key.contentType)?.string, isAttachment: false,
            revisionPosition: value.value(forKey: Blob.Key.revpos)?.integer)
    }

    private static func length(_ value: EncodedValue) -> UInt64? {
        guard let number = value.value(forKey: Blob.Key.length)?.integer, number >= 0 else { return nil }
        return UInt64(number)
    }
}
