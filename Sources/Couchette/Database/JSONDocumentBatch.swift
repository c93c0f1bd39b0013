/// Documents given as JSON text to ``Batch/save(id:json:in:concurrencyControl:)``, already
/// transcoded into the stored binary format: every body in one buffer, every id in another.
///
/// This is the bulk path: no `MutableDocument`, no array, string or tracker per document. Each
/// text is transcoded into a small buffer that stays in the cache, then copied after the previous
/// body into a ``BodyBuffer``; its revision digest for a new document (MD5 over the deleted flag,
/// an empty parent and the body, see ``RevisionID/makeStored(parent:deleted:body:)``) is computed
/// by ``BodyDigester`` on another thread while the caller transcodes the next ones. The writer
/// copies each body once, into the record LMDB reserves for it.
struct JSONDocumentBatch: Sendable {
    /// Where one document's id and body end; each starts where the previous one ended.
    struct Entry: Sendable {
        let idEnd: Int
        let bodyEnd: Int
    }

    let collection: CollectionSpec
    let control: ConcurrencyControl
    let ids: [UInt8]
    let bodies: BodyBuffer
    let entries: [Entry]
    /// The digests of the bodies, in order, a chunk at a time.
    let chunks: [DigestChunk]
    let digester: BodyDigester

    var count: Int { entries.count }

    /// Calls `body` with each document's id bytes, body bytes and new-document digest, in the
    /// order they were added, once every digest is computed.
    func forEach(
        _ body: (_ id: UnsafeRawBufferPointer, _ body: UnsafeRawBufferPointer, _ newDigest: (UInt64, UInt64)) throws -> Void
    ) throws {
        try digester.waitForChunks()
        try ids.withUnsafeBytes { ids in
            var idStart = 0
            var bodyStart = 0
            var entry = 0
            for chunk in chunks {
                for digest in chunk.digests {
                    let end = entries[entry]
                    try body(UnsafeRawBufferPointer(rebasing: ids[idStart..<end.idEnd]), bodies.bytes(bodyStart..<end.bodyEnd), digest)
                    idStart = end.idEnd
                    bodyStart = end.bodyEnd
                    entry += 1
                }
            }
        }
    }

    /// What the writer did with the documents (``DocumentStore/saveJSON(_:_:)``): document `i`
    /// was new and got sequence `firstSequence + i` and revision `1-<its new-document digest>`,
    /// unless ``others`` lists it (it existed: it got a new revision of its current one). Nothing
    /// per document is made for the usual, all-new batch.
    struct Written: Sendable, Equatable {
        var firstSequence: UInt64 = 0
        /// The documents written otherwise than as new ones, by ascending index.
        var others: [Other] = []

        struct Other: Sendable, Equatable {
            let index: Int
            let revision: StoredRevisionID
            let sequence: UInt64
        }
    }

    /// The revisions and sequences the documents got, read after the commit for the objects that
    /// track them (``BatchRevisions``), in any order. Holds the digests, not the bodies: a
    /// document kept by its caller keeps no body buffer alive.
    struct Revisions {
        private let chunks: [DigestChunk]
        /// The index of each chunk's first document.
        private let chunkStarts: [Int]
        private let written: Written

        init(_ documents: JSONDocumentBatch, _ written: Written) {
            chunks = documents.chunks
            var starts: [Int] = []
            starts.reserveCapacity(chunks.count)
            var start = 0
            for chunk in chunks {
                starts.append(start)
                start += chunk.digests.count
            }
            chunkStarts = starts
            self.written = written
        }

        /// The revision and sequence of document `index`.
        func revision(of index: Int) -> (revision: StoredRevisionID, sequence: UInt64) {
            let others = written.others
            let other = Self.firstIndex(in: others.count) { others[$0].index >= index }
            if other < others.count && others[other].index == index { return (others[other].revision, others[other].sequence) }
            // The chunk holding it: the last one starting at or before it.
            let chunk = Self.firstIndex(in: chunkStarts.count) { chunkStarts[$0] > index } - 1
            // The writer waited for every chunk before it wrote the batch, so each digest is there.
            let digest = chunks[chunk].digests[index - chunkStarts[chunk]]
            return (.packed(generation: 1, digest: digest), written.firstSequence &+ UInt64(index))
        }

        /// The first of `0..<count` for which `isPast` holds (`count` if none), `isPast` being
        /// false then true along the range.
        private static func firstIndex(in count: Int, where isPast: (Int) -> Bool) -> Int {
            var low = 0
            var high = count
            while low < high {
                let middle = (low + high) / 2
                if isPast(middle) { high = middle } else { low = middle + 1 }
            }
            return low
        }
    }

    /// Collects documents of one collection and concurrency control on the caller's side.
    struct Builder {
        let collection: CollectionSpec
        let control: ConcurrencyControl
        private var ids: [UInt8] = []
        /// Transcodes one document at a time; its bytes are then copied into ``bodies``.
        private var sink = BinarySink(capacity: 4096)
        private var bodies: BodyBuffer
        private var bodyCount = 0
        private var entries: [Entry] = []
        private var chunks: [DigestChunk] = []
        /// Ends of the bodies not yet in a chunk (they start at ``chunkStart``).
        private var pendingEnds: [Int] = []
        private var chunkStart = 0
        private let digester = BodyDigester()

        /// Bodies kept in one buffer before a new one is started: a large import then neither
        /// copies its buffer as it doubles nor touches twice the memory it needs (each full
        /// buffer becomes one operation; the next starts at this capacity).
        static let bufferLimit = 8 << 20

        /// A builder whose body buffer starts with room for `capacity` bytes: ``bufferLimit`` once
        /// a batch has filled a buffer; by default as much as the last run of JSON documents
        /// needed (at least 64 KiB), since an import commits runs of one size, one after another,
        /// and a buffer grown by doubling copies its bytes each time.
        init(collection: CollectionSpec, control: ConcurrencyControl, capacity: Int? = nil) {
            self.collection = collection
            self.control = control
            let last = Self.lastRun.withLock { $0 }
            bodies = BodyBuffer(capacity: capacity ?? max(last.bodies, 1 << 16))
            entries.reserveCapacity(last.documents)
            ids.reserveCapacity(last.idBytes)
            pendingEnds.reserveCapacity(64)
        }

        var isEmpty: Bool { entries.isEmpty }

        /// Whether the body buffer has reached ``bufferLimit``.
        var isFull: Bool { bodyCount >= Self.bufferLimit }

        /// Transcodes `json` after the bodies collected so far. A bad text throws
        /// `.invalidParameter` naming `id` and leaves the builder as it was.
        mutating func append(id: String, json: String) throws {
            try transcode(json, of: "document '\(id)'")
            add(id: id)
        }

        /// Transcodes `json` and takes the document's id from its first top-level property
        /// among `idKeys` (a non-empty string, or an integer in decimal; a generated id when none
        /// is there), removing that property and every one of `removedKeys` from the body: what
        /// `couchette import` does with `_id`, `_rev` and `--id-key`. Returns the id.
        mutating func append(json: String, idKeys: [String], removing removedKeys: [String]) throws -> String {
            try transcode(json, of: "the document")
            var id: String?
            var removed = removedKeys
            // Only a text that can spell one of the keys is read back (an escape can spell any).
            let mayHoldKeys = (idKeys + removedKeys).contains { Self.mayHold(key: $0, json) }
            if mayHoldKeys {
                let body = EncodedValue(bytes: sink.bytes)
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
                    sink.replace(with: encoder.bytes)
                }
            }
            let documentID = id ?? DocumentIDGenerator.make()
            try DocumentStore.validate(id: documentID)
            add(id: documentID)
            return documentID
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

        /// Transcodes `json` into ``sink`` (alone) and checks that it is an object. Errors name
        /// `document`; nothing is added to the builder.
        private mutating func transcode(_ json: String, of document: @autoclosure () -> String) throws {
            var json = json
            try json.withUTF8 { utf8 in
                do {  // refuses text over `JSON.maximumBinaryInput` too, with the other errors named below
                    try sink.transcode(utf8)
                } catch {
                    guard let error = error as? CouchetteError else { throw error }
                    throw CouchetteError(error.code, "JSON of \(document()): \(error.message)")
                }
                guard let tag = sink.firstByte, tag == ValueTag.narrowDictionary || tag == ValueTag.dictionary else {
                    throw CouchetteError(.invalidParameter, "JSON for \(document()) must be an object")
                }
            }
        }

        /// Adds a body already in the stored binary format, as the document `id` (a validated
        /// id): what ``Batch`` does with new `MutableDocument`s and models, so that they take the
        /// same writer path as JSON documents. Returns the document's index in the run.
        mutating func append(id: String, body: [UInt8]) -> Int {
            let count = body.count
            if bodyCount + count > bodies.capacity { moveBodies(toHold: bodyCount + count) }
            body.withUnsafeBytes { body in
                if let source = body.baseAddress { (bodies.base + bodyCount).copyMemory(from: source, byteCount: count) }
            }
            added(id: id, count: count)
            return entries.count - 1
        }

        /// The number of documents collected so far.
        var count: Int { entries.count }

        /// Adds the body in ``sink`` as the document `id`: copied after the bodies before it,
        /// and handed to the digest thread with the others of its chunk.
        private mutating func add(id: String) {
            let count = sink.count
            if bodyCount + count > bodies.capacity { moveBodies(toHold: bodyCount + count) }
            sink.withBytes { body in
                if let source = body.baseAddress { (bodies.base + bodyCount).copyMemory(from: source, byteCount: count) }
            }
            added(id: id, count: count)
        }

        /// Records the `count` bytes just copied after the bodies as the document `id`, and hands
        /// a full chunk to the digest thread.
        private mutating func added(id: String, count: Int) {
            bodyCount += count
            ids.append(contentsOf: id.utf8)
            entries.append(Entry(idEnd: ids.count, bodyEnd: bodyCount))
            pendingEnds.append(bodyCount)
            guard bodyCount - chunkStart >= BodyDigester.chunkBytes else { return }
            handOverChunk()
            // Only runs longer than a chunk map their pages ahead: a small one is written by now.
            if let pages = bodies.rangeToPrepare(upTo: bodyCount) { digester.prepare(pages, of: bodies) }
        }

        /// Gives the bodies not yet in a chunk to the digest thread (or, `inline`, hashes them now).
        private mutating func handOverChunk(inline: Bool = false) {
            guard !pendingEnds.isEmpty else { return }
            let chunk = DigestChunk(start: chunkStart, ends: pendingEnds)
            chunks.append(chunk)
            digester.hash(chunk, in: bodies, inline: inline)
            chunkStart = bodyCount
            pendingEnds.removeAll(keepingCapacity: true)
        }

        /// Copies the bodies into a buffer of at least `needed` bytes (twice the old one, up to
        /// ``bufferLimit`` and what one body needs). The old buffer stays alive while digest jobs
        /// read it; the bytes are the same.
        private mutating func moveBodies(toHold needed: Int) {
            let larger = BodyBuffer(capacity: max(needed, min(2 * bodies.capacity, Self.bufferLimit + (1 << 16))))
            larger.base.copyMemory(from: bodies.base, byteCount: bodyCount)
            bodies = larger
        }

        /// The size of the last run of JSON documents in the process, an eighth more (bodies up
        /// to a full buffer, ids and entries up to about a MiB each): what the next builder
        /// reserves, so its arrays do not regrow either.
        private static let lastRun = Locked((bodies: 0, documents: 0, idBytes: 0))

        /// The documents collected, ready to cross into the database actor. The last bodies go
        /// to the digest thread too, unless the whole run is one small chunk: then they are hashed
        /// here, which costs less than the hand-off.
        mutating func finished() -> JSONDocumentBatch {
            handOverChunk(inline: chunks.isEmpty)
            Self.lastRun.withLock { last in
                last = (
                    bodies: min(bodyCount + bodyCount / 8, Self.bufferLimit + (1 << 16)),
                    documents: min(entries.count + entries.count / 8, 1 << 16), idBytes: min(ids.count + ids.count / 8, 1 << 20)
                )
            }
            return JSONDocumentBatch(
                collection: collection, control: control, ids: ids, bodies: bodies, entries: entries, chunks: chunks,
                digester: digester)
        }

        /// Skips the digests still queued: the documents will not be written.
        func abandon() { digester.cancel() }
    }
}
