import Foundation
import Synchronization

/// An immutable snapshot of a stored document: its id, revision, sequence and properties.
///
/// Property reads go straight to the stored bytes (`ValueTag`); nothing is decoded up front.
/// `Document` is `Sendable`: pass it between tasks freely. To change it, make a mutable copy.
///
/// ```swift
/// if let doc = try await collection.document(id: "task-1") {
///     print(doc.string(forKey: "title") ?? "untitled", doc.revisionID ?? "")
///     let edit = doc.toMutable().setBoolean(true, forKey: "completed")
///     try await collection.save(document: edit)
/// }
/// ```
public final class Document: DictionaryProtocol, Sendable {
    /// The document's id, unique within its collection.
    public let id: String
    /// The revision this snapshot shows (`<generation>-<md5 hex>`); nil for a never-saved snapshot.
    public var revisionID: String? { revision?.text }
    /// The revision as the record stores it: formatted as text only when read, since most reads
    /// of a document never look at it.
    let revision: StoredRevisionID?
    /// The collection-wide sequence number of the save that produced this revision (0 if unsaved).
    public let sequence: UInt64
    /// True for a tombstone (only seen through conflict handlers and replication).
    public let isDeleted: Bool
    /// The properties: every read below is the nested dictionaries' own read, written once there.
    let properties: DictionaryObject
    /// The entry of ``properties`` a property was last found at by name (-1: none), which
    /// ``toMutable()``'s copy takes as its hint: an update reads a property, sets it, and saves, and the
    /// save, which writes the new value over the old one in place, then finds the old one with
    /// one look at that entry instead of a second search (see ``BorrowedValue/entry(forKey:near:)``,
    /// which checks the key found, so a hint can never mislead it).
    private let lastFoundEntry = Atomic<Int>(-1)

    convenience init(id: String, revisionID: String?, sequence: UInt64, isDeleted: Bool = false, body: [UInt8]) {
        self.init(id: id, revision: revisionID.map(StoredRevisionID.text), sequence: sequence, isDeleted: isDeleted, body: body)
    }

    init(id: String, revision: StoredRevisionID?, sequence: UInt64, isDeleted: Bool = false, body: [UInt8]) {
        self.id = id
        self.revision = revision
        self.sequence = sequence
        self.isDeleted = isDeleted
        self.properties = DictionaryObject(encoded: EncodedValue(bytes: body.isEmpty ? Document.emptyBody : body))
    }

    /// A snapshot of `mutable`'s current contents, keeping its id and revision. Values that cannot
    /// be stored (NaN, infinities, unsupported types) appear as null in the snapshot.
    public convenience init(_ mutable: MutableDocument) {
        let body = (try? mutable.encodeBody(lenient: true)) ?? Document.emptyBody
        self.init(id: mutable.id, revisionID: mutable.revisionID, sequence: mutable.sequence, body: body)
    }

    static let emptyBody: [UInt8] = (try? ValueEncoder.encode(.dictionary([:]))) ?? []

    /// The stored body, read in place.
    var root: EncodedValue { properties.encoded }
    var body: [UInt8] { root.bytes }

    public var count: Int { properties.count }
    public var keys: [String] { properties.keys }

    public func value(forKey key: String) -> Any? { property(key).map(ImmutableValues.wrap) }

    /// The property as an `Int` (see ``DictionaryProtocol/int(forKey:)``), read from the stored
    /// bytes without making an `Any` of it: the read of a counter before its update.
    ///
    /// ```swift
    /// let visits = doc.int(forKey: "visits")   // 0 when missing or not a number
    /// ```
    public func int(forKey key: String) -> Int { Int(Coercion.int64(stored: property(key))) }
    /// The property as an `Int64` (see ``DictionaryProtocol/int64(forKey:)``), read from the
    /// stored bytes without making an `Any` of it.
    public func int64(forKey key: String) -> Int64 { Coercion.int64(stored: property(key)) }

    /// Where a property was last found by name (-1: none), for the mutable copies' saves.
    var lastFoundEntryHint: Int { lastFoundEntry.load(ordering: .relaxed) }

    /// The stored property `key`, its entry remembered in ``lastFoundEntry``.
    private func property(_ key: String) -> EncodedValue? {
        guard let (entry, value) = root.entry(forKey: key, near: -1) else { return nil }
        lastFoundEntry.store(entry, ordering: .relaxed)
        return value
    }

    /// The property as an array, or nil when it is missing or not an array.
    public func array(forKey key: String) -> ArrayObject? { properties.array(forKey: key) }
    /// The property as a nested dictionary, or nil when it is missing or not a dictionary.
    public func dictionary(forKey key: String) -> DictionaryObject? { properties.dictionary(forKey: key) }
    /// A fragment for path-style reads that never fail: `doc["address"]["city"].string`.
    public subscript(key: String) -> Fragment { properties[key] }

    public func toDictionary() -> [String: Any] { properties.toDictionary() }
    /// The properties as compact JSON (without `_id` or `_rev`).
    public func toJSON() -> String { properties.toJSON() }

    /// A mutable copy that remembers this revision, so a later save can detect conflicts.
    public func toMutable() -> MutableDocument {
        let root = MutableDictionaryObject(encoded: properties.encoded, hintSource: self)
        return MutableDocument(id: id, revision: revision, sequence: sequence, root: root)
    }
}

extension Document: CustomStringConvertible {
    /// The id, the revision and the properties as JSON, for logs and debugging.
    public var description: String { "Document(\(id), \(revisionID ?? "unsaved")): \(toJSON())" }
}
