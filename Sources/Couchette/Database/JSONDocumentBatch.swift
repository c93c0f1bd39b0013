/// Documents given as JSON text to ``Batch/save(id:json:in:concurrencyControl:)``, already
/// transcoded into the stored binary format: every body in one buffer, every id in another.
///
/// This is the bulk path: no `MutableDocument`, no array, string or tracker per document. Each
/// body is transcoded straight after the previous one into the same buffer, and its revision
/// digest for a new document (MD5 over the deleted flag, an empty parent and the body, see
/// ``RevisionID/makeStored(parent:deleted:body:)``) is computed while its bytes are still in the
/// cache. The writer copies each body once, into the record LMDB reserves for it.
struct JSONDocumentBatch: Sendable {
    /// Where one document's id and body end; each starts where the previous one ended.
    struct Entry: Sendable {
        let idEnd: Int
        let bodyEnd: Int
        /// The digest of generation 1 of this body (no parent): its revision id when the
        /// document does not exist yet, as two little-endian words.
        let newDigest: (UInt64, UInt64)
    }

    let collection: CollectionSpec
    let control: ConcurrencyControl
    let ids: [UInt8]
    let bodies: [UInt8]
    let entries: [Entry]

    var count: Int { entries.count }

    /// Calls `body` with each document's id bytes, body bytes and new-document digest, in the
    /// order they were added.
    func forEach(
        _ body: (_ id: UnsafeRawBufferPointer, _ body: UnsafeRawBufferPointer, _ newDigest: (UInt64, UInt64)) throws -> Void
    ) rethrows {
        try ids.withUnsafeBytes { ids in
            try bodies.withUnsafeBytes { bodies in
                var idStart = 0
                var bodyStart = 0
                for entry in entries {
                    try body(
                        UnsafeRawBufferPointer(rebasing: ids[idStart..<entry.idEnd]),
                        UnsafeRawBufferPointer(rebasing: bodies[bodyStart..<entry.bodyEnd]), entry.newDigest)
                    idStart = entry.idEnd
                    bodyStart = entry.bodyEnd
                }
            }
        }
    }

    /// Collects documents of one collection and concurrency control on the caller's side.
    struct Builder {
        let collection: CollectionSpec
        let control: ConcurrencyControl
        private var ids: [UInt8] = []
        private var sink: BinarySink
        private var entries: [Entry] = []

        /// Bodies kept in one buffer before a new one is started: a large import then neither
        /// copies its buffer as it doubles nor touches twice the memory it needs (each full
        /// buffer becomes one operation; the next starts at this capacity).
        static let bufferLimit = 8 << 20

        /// A builder whose body buffer starts with room for `capacity` bytes: a little for the
        /// first documents of a batch, ``bufferLimit`` once a batch has filled a buffer.
        init(collection: CollectionSpec, control: ConcurrencyControl, capacity: Int = 1 << 16) {
            self.collection = collection
            self.control = control
            sink = BinarySink(capacity: capacity)
        }

        var isEmpty: Bool { entries.isEmpty }

        /// Whether the body buffer has reached ``bufferLimit``.
        var isFull: Bool { sink.encoder.bytes.count >= Self.bufferLimit }

        /// Transcodes `json` after the bodies collected so far. A bad text throws
        /// `.invalidParameter` naming `id` and leaves the builder as it was.
        mutating func append(id: String, json: String) throws {
            let start = try transcode(json, of: "document '\(id)'")
            try add(id: id, bodyFrom: start)
        }

        /// Transcodes `json` and takes the document's id from its first top-level property
        /// among `idKeys` (a non-empty string, or an integer in decimal; a generated id when none
        /// is there), removing that property and every one of `removedKeys` from the body: what
        /// `couchette import` does with `_id`, `_rev` and `--id-key`. Returns the id.
        mutating func append(json: String, idKeys: [String], removing removedKeys: [String]) throws -> String {
            let start = try transcode(json, of: "the document")
            do {
                var id: String?
                var removed = removedKeys
                // Only a text that can spell one of the keys is read back (an escape can spell any).
                let mayHoldKeys = (idKeys + removedKeys).contains { Self.mayHold(key: $0, json) }
                if mayHoldKeys {
                    let body = EncodedValue(bytes: Array(sink.encoder.bytes[start...]))
                    for key in idKeys {
                        guard let value = body.value(forKey: key) else { continue }
                        id = try Self.idText(value, key: key)
                        removed.append(key)
                        break
                    }
                    let kept = body.keys.filter { !removed.contains($0) }
                    if kept.count < body.count {
                        var encoder = ValueEncoder()
                        try encoder.writeDictionary(sortedKeys: kept) { encoder, index in
                            if let value = body.value(forKey: kept[index]) { encoder.append(value) }
                        }
                        sink.discard(from: start)
                        sink.appendEncoded(encoder.bytes)
                    }
                }
                let documentID = id ?? DocumentIDGenerator.make()
                try DocumentStore.validate(id: documentID)
                try add(id: documentID, bodyFrom: start)
                return documentID
            } catch {
                sink.discard(from: start)
                throw error
            }
        }

        /// Whether `json` may hold the property `key`: its quoted name, or any escape.
        private static func mayHold(key: String, _ json: String) -> Bool {
            json.utf8.contains(UInt8(ascii: "\\")) || json.contains("\"\(key)\"")
        }

        /// A document id read from a property: a non-empty string, or an integer in decimal.
        private static func idText(_ value: EncodedValue, key: String) throws -> String {
            if let text = value.string, !text.isEmpty { return text }
            if let number = value.integer { return String(number) }
            throw CouchetteError(
                .invalidParameter, "'\(key)' must be a non-empty string or an integer, not \(JSON.string(from: value.decode()))")
        }

        /// Transcodes `json` after the bodies collected so far and checks that it is an object;
        /// returns where its body starts. Errors name `document`; the builder is left as it was.
        private mutating func transcode(_ json: String, of document: @autoclosure () -> String) throws -> Int {
            var json = json
            return try json.withUTF8 { utf8 in
                guard utf8.count <= JSON.maximumBinaryInput else {
                    throw CouchetteError(
                        .invalidParameter,
                        "JSON of \(document()) is \(utf8.count) bytes, too large to store (the limit is \(JSON.maximumBinaryInput))")
                }
                let start = sink.encoder.bytes.count
                do {
                    try JSONParser.parse(utf8: utf8, into: &sink)
                } catch {
                    sink.discard(from: start)
                    guard let error = error as? CouchetteError else { throw error }
                    throw CouchetteError(error.code, "JSON of \(document()): \(error.message)")
                }
                let tag = sink.encoder.bytes[start]
                guard tag == ValueTag.narrowDictionary || tag == ValueTag.dictionary else {
                    sink.discard(from: start)
                    throw CouchetteError(.invalidParameter, "JSON for \(document()) must be an object")
                }
                return start
            }
        }

        /// Records the body transcoded from `start` on as the document `id`, with its digest.
        private mutating func add(id: String, bodyFrom start: Int) throws {
            let digest = sink.encoder.bytes.withUnsafeBytes {
                RevisionID.newDocumentDigest(body: UnsafeRawBufferPointer(rebasing: $0[start...]))
            }
            ids.append(contentsOf: id.utf8)
            entries.append(Entry(idEnd: ids.count, bodyEnd: sink.encoder.bytes.count, newDigest: digest))
        }

        /// The documents collected, ready to cross into the database actor.
        func finished() -> JSONDocumentBatch {
            JSONDocumentBatch(collection: collection, control: control, ids: ids, bodies: sink.encoder.bytes, entries: entries)
        }
    }
}
