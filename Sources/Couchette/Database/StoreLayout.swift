import Foundation

/// The keys Couchette writes into the tables of ``StorageEnvironment/Tables``.
///
/// | table         | key                                        | value                              |
/// |---------------|--------------------------------------------|------------------------------------|
/// | `meta`        | `"format"`                                 | format version (u32)               |
/// | `meta`        | `"c:" scope "." name`                      | collection number (u32)            |
/// | `meta`        | `"next-collection"`                        | next collection number (u32)       |
/// | main          | `"sequence:" collection`                   | last sequence of the collection    |
/// | main          | `"count:" collection`                      | live documents of the collection   |
/// | main          | `"sequence-tail:" collection`              | newest `sequences` entries (\*\*)  |
/// | main          | `"catalog-generation"`                     | catalog changes so far (u64)       |
/// | `meta`        | `"purges:" collection`                     | purges asked for (not expirations) |
/// | `meta`        | `"uuid"`                                   | database UUID, 32 hex digits       |
/// | `meta`        | `"local:" collection, id`                  | `_local` document body (binary)    |
/// | `documents`   | collection, document id                    | ``DocumentRecord``                 |
/// | `sequences`   | collection, sequence                       | u8 deleted flag, document id       |
/// | `revisions`   | collection, document id                    | ``RevisionTree`` (\*)              |
/// | `expirations` | expiry (ms since 1970), collection, id     | empty                              |
/// | `meta`        | `"next-index"`                             | next index number (u32)            |
/// | `indexes`     | collection, index name                     | ``IndexDefinition`` (JSON)         |
/// | `index-entries` (dupsort) | index number (u32), ``IndexKey`` tuple (≤ 500 bytes) | document id (one value per document) |
/// | `full-text`   | index number (u32), term, `00`, first document sequence (u64) | posting block (see ``FullTextStore``) |
///
/// (\*) Only for documents with more history than their current revision: a document without an
/// entry has the one-revision tree its record describes (see ``DocumentStore/revisionTree(_:_:_:)``).
///
/// (\*\*) A collection's sequence index is its `sequences` entries followed by its tail, a short
/// packed list of the newest entries (``SequenceTail``): every sequence in the tail is greater
/// than every sequence of the collection in `sequences`. A save appends to the tail, which lives
/// on the main database's page that every commit rewrites anyway, instead of dirtying the last
/// leaf of `sequences` and the branch above it (issue #21); a full tail moves to the table in one
/// go. Read and written only through ``SequenceIndex``. Format 4 added it: a format-3 file is
/// upgraded at open (an empty or missing tail is valid), and a version that reads format 3 refuses
/// format 4 files, since it would miss the entries of the tail (and its writes would break the
/// order between table and tail). As for the earlier upgrades, a process of an older version must
/// not have the file open while a newer one upgrades it.
///
/// The counters live in LMDB's main database (``StorageEnvironment/Tables/counters``), beside the
/// records of the tables: every commit rewrites that page anyway, so a save dirties one page
/// less than with the counters in `meta` (format 1 kept them there; opening such a file moves
/// them, see ``DocumentStore/upgradeFormat(_:from:)``).
///
/// The catalog generation grows by one with every change to the catalog (a collection created or
/// deleted, an upgrade from format 1 or 2), so a process that read the catalog under generation *g* may use
/// its copy for as long as the stored generation is still *g*: a commit reads that one value
/// instead of every `"c:"` entry (see ``Catalog``). It is a stored value, not LMDB's transaction
/// id, which compaction restarts; compaction copies it like any other value, and it never goes
/// down. Format 3 added it: a format-2 file is upgraded at open, and a version that reads format
/// 2 refuses format 3 files, so no process that does not know the counter can change the catalog
/// of a file whose readers rely on it (a process of such a version must not have the file open
/// while a newer one upgrades it, as for the format 1 → 2 upgrade).
///
/// `_local` documents (replication checkpoints) are never replicated and have no sequence, so
/// they live in `meta`. The UUID names this database in replication ids.
///
/// LMDB keys are at most 511 bytes, which bounds document ids to 480 bytes.
///
/// Collections are numbered (u32, big-endian in keys) so that every table is shared by all
/// collections, renaming needs no data move and deleting one is a prefix range delete.
enum StoreLayout {
    static let formatVersion: UInt32 = 4
    static let defaultCollectionNumber: UInt32 = 0
    static let formatKey = Array("format".utf8)
    static let nextCollectionKey = Array("next-collection".utf8)
    static let nextIndexKey = Array("next-index".utf8)
    /// In the main database (``StorageEnvironment/Tables/counters``), which every commit reads.
    static let catalogGenerationKey = Array("catalog-generation".utf8)
    /// LMDB keys are at most 511 bytes; a document key is a collection number and the id.
    static let maximumDocumentIDLength = 480

    static func indexDefinitionKey(_ collection: UInt32, _ name: String) -> [UInt8] {
        documentKey(collection, name)
    }

    static func indexEntriesPrefix(_ index: UInt32) -> [UInt8] {
        encodeUInt32(index)
    }

    static func collectionKey(scope: String, name: String) -> [UInt8] {
        collectionKeyPrefix + Array("\(scope).\(name)".utf8)
    }

    /// Short, because LMDB keys are at most 511 bytes and two names can be 251 bytes each.
    static let collectionKeyPrefix = Array("c:".utf8)

    static let sequenceCounterPrefix = Array("sequence:".utf8)
    static let countPrefix = Array("count:".utf8)
    /// The prefix of a collection's sequence tail (``SequenceTail``), keyed like the counters.
    static let sequenceTailPrefix = Array("sequence-tail:".utf8)

    static func sequenceCounterKey(_ collection: UInt32) -> [UInt8] {
        withCounterKey(sequenceCounterPrefix, collection) { Array($0) }
    }

    static func countKey(_ collection: UInt32) -> [UInt8] {
        withCounterKey(countPrefix, collection) { Array($0) }
    }

    static func sequenceTailKey(_ collection: UInt32) -> [UInt8] {
        withCounterKey(sequenceTailPrefix, collection) { Array($0) }
    }

    /// Calls `body` with the bytes of the counter key `prefix` `collection` (``sequenceCounterKey(_:)``,
    /// ``countKey(_:)``, ``sequenceTailKey(_:)``), built on the stack: a commit reads and writes its counters without
    /// allocating their keys.
    static func withCounterKey<R>(_ prefix: [UInt8], _ collection: UInt32, _ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try prefix.withUnsafeBytes { prefix in
            try withUnsafeTemporaryAllocation(byteCount: prefix.count + 4, alignment: 1) { key in
                key.copyMemory(from: prefix)
                key.storeBytes(of: collection.bigEndian, toByteOffset: prefix.count, as: UInt32.self)
                return try body(UnsafeRawBufferPointer(key))
            }
        }
    }

    /// A purge leaves no sequence entry: readers that follow a collection by its sequences (a
    /// live query's kept documents, the cross-process monitor) learn from this counter that
    /// documents vanished without one. Expired documents the sweeper purges count too: a kept
    /// copy read before its expiration was set does not know it, and the purge removes the
    /// sequence entry that setting it made.
    static func purgeCountKey(_ collection: UInt32) -> [UInt8] {
        var key = Array("purges:".utf8)
        KeyEncoding.appendUInt32(collection, to: &key)
        return key
    }

    static let uuidKey = Array("uuid".utf8)

    static func localDocumentPrefix(_ collection: UInt32) -> [UInt8] {
        var key = Array("local:".utf8)
        KeyEncoding.appendUInt32(collection, to: &key)
        return key
    }

    static func localDocumentKey(_ collection: UInt32, _ id: String) -> [UInt8] {
        localDocumentPrefix(collection) + Array(id.utf8)
    }

    static func collectionPrefix(_ collection: UInt32) -> [UInt8] {
        var key: [UInt8] = []
        KeyEncoding.appendUInt32(collection, to: &key)
        return key
    }

    static func documentKey(_ collection: UInt32, _ id: String) -> [UInt8] {
        var key: [UInt8] = []
        key.reserveCapacity(4 + id.utf8.count)  // one allocation: queries build one per document they fetch
        KeyEncoding.appendUInt32(collection, to: &key)
        key.append(contentsOf: id.utf8)
        return key
    }

    /// Calls `body` with the bytes of ``documentKey(_:_:)``, built on the stack: a point read
    /// allocates no key.
    static func withDocumentKey<R>(_ collection: UInt32, _ id: String, _ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        var id = id
        return try id.withUTF8 { utf8 in
            try withUnsafeTemporaryAllocation(byteCount: 4 + utf8.count, alignment: 4) { key in
                key.storeBytes(of: collection.bigEndian, as: UInt32.self)
                if let base = utf8.baseAddress { (key.baseAddress! + 4).copyMemory(from: base, byteCount: utf8.count) }
                return try body(UnsafeRawBufferPointer(key))
            }
        }
    }

    static func sequenceKey(_ collection: UInt32, _ sequence: UInt64) -> [UInt8] {
        var key: [UInt8] = []
        key.reserveCapacity(12)  // one allocation: every write builds one or two
        KeyEncoding.appendUInt32(collection, to: &key)
        KeyEncoding.appendUInt64(sequence, to: &key)
        return key
    }

    /// Calls `body` with the bytes of ``sequenceKey(_:_:)``, built on the stack: a save's writer
    /// removes one sequence entry and adds another without allocating either key.
    static func withSequenceKey<R>(_ collection: UInt32, _ sequence: UInt64, _ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try withUnsafeTemporaryAllocation(byteCount: 12, alignment: 4) { key in
            key.storeBytes(of: collection.bigEndian, as: UInt32.self)
            key.storeBytes(of: sequence.bigEndian, toByteOffset: 4, as: UInt64.self)
            return try body(UnsafeRawBufferPointer(key))
        }
    }

    static func expirationKey(_ milliseconds: UInt64, _ collection: UInt32, _ id: String) -> [UInt8] {
        var key: [UInt8] = []
        KeyEncoding.appendUInt64(milliseconds, to: &key)
        KeyEncoding.appendUInt32(collection, to: &key)
        key.append(contentsOf: id.utf8)
        return key
    }

    static func encodeUInt64(_ value: UInt64) -> [UInt8] {
        var bytes: [UInt8] = []
        KeyEncoding.appendUInt64(value, to: &bytes)
        return bytes
    }

    static func decodeUInt64(_ bytes: UnsafeRawBufferPointer?) -> UInt64 {
        guard let bytes, bytes.count == 8 else { return 0 }
        return KeyEncoding.readUInt64(bytes, at: 0)
    }

    static func encodeUInt32(_ value: UInt32) -> [UInt8] {
        var bytes: [UInt8] = []
        KeyEncoding.appendUInt32(value, to: &bytes)
        return bytes
    }

    static func decodeUInt32(_ bytes: UnsafeRawBufferPointer?) -> UInt32? {
        guard let bytes, bytes.count == 4 else { return nil }
        return KeyEncoding.readUInt32(bytes, at: 0)
    }
}
