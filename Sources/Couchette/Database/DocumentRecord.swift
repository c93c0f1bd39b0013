/// The current state of one document as stored in the `documents` table: deleted flag, sequence,
/// expiration (ms since 1970, 0 = none), revision id and body (see ``ValueTag``); the byte layout
/// is at ``encoded()``.
struct DocumentRecord: Sendable {
    var isDeleted: Bool
    var sequence: UInt64
    var expiration: UInt64
    /// The revision id as stored: a packed id is formatted as text only when read, since most
    /// readers of a record (query scans, index probes) never look at it.
    private(set) var revision: StoredRevisionID
    var body: [UInt8]

    var revisionID: String {
        get { revision.text }
        set { revision = .text(newValue) }
    }

    /// `u8 flags`, `u64 sequence`, [`u64 expiration`], revision id, body. Little-endian.
    ///
    /// Flags: 1 deleted, 0x80 compact layout, and in the compact layout 2 (an expiration follows;
    /// absent means none) and 4 (the revision id is packed as `u32 generation` + 16 digest bytes,
    /// see ``RevisionID/packed(_:)``, instead of `u16 length` + UTF-8). Records written before the
    /// compact layout (flags 0 or 1) always hold the expiration and the UTF-8 id; both decode.
    func encoded() -> [UInt8] {
        let layout = self.layout
        return [UInt8](unsafeUninitializedCapacity: layout.size) { buffer, count in
            encode(layout, into: UnsafeMutableRawBufferPointer(buffer))
            count = layout.size
        }
    }

    /// How ``encoded()`` lays this record out: its size, and the revision id in the form it takes.
    struct Layout {
        let size: Int
        fileprivate let revision: StoredRevisionID
    }

    /// The layout of ``encoded()``: a text id this library made is packed (see ``RevisionID/packed(_:)``).
    var layout: Layout {
        var revision = self.revision
        if case .text(let text) = revision, let packed = RevisionID.packed(text) {
            revision = .packed(generation: packed.generation, digest: RevisionID.digestWords(packed.digest))
        }
        switch revision {
        case .packed:
            return Layout(size: 9 + (expiration != 0 ? 8 : 0) + 20 + body.count, revision: revision)
        case .text(let text):
            return Layout(size: 9 + (expiration != 0 ? 8 : 0) + 2 + text.utf8.count + body.count, revision: revision)
        }
    }

    /// Writes ``encoded()`` into `output`, which holds exactly `layout.size` bytes (an LMDB page
    /// reserved for it, see ``WriteTransaction/put(_:key:count:replacing:writing:)``).
    func encode(_ layout: Layout, into output: UnsafeMutableRawBufferPointer) {
        body.withUnsafeBytes { body in
            Self.encode(
                isDeleted: isDeleted, sequence: sequence, expiration: expiration, revision: layout.revision, body: body,
                into: UnsafeMutableRawBufferPointer(rebasing: output[..<layout.size]))
        }
    }

    /// The size of the record of a live revision made here (a packed id) without an expiration.
    static func packedSize(bodyCount: Int) -> Int { 9 + 20 + bodyCount }

    /// Writes the record of a live revision made here, without an expiration, into `output`,
    /// which holds exactly ``packedSize(bodyCount:)`` bytes: what ``encode(_:into:)`` writes for
    /// such a record, from a body that lies anywhere (bulk saves keep theirs in one buffer).
    static func encodeLive(
        sequence: UInt64, generation: UInt32, digest: (UInt64, UInt64), body: UnsafeRawBufferPointer,
        into output: UnsafeMutableRawBufferPointer
    ) {
        encode(
            isDeleted: false, sequence: sequence, expiration: 0, revision: .packed(generation: generation, digest: digest), body: body,
            into: output)
    }

    private static func encode(
        isDeleted: Bool, sequence: UInt64, expiration: UInt64, revision: StoredRevisionID, body: UnsafeRawBufferPointer,
        into output: UnsafeMutableRawBufferPointer
    ) {
        var position = 0
        func append<T: FixedWidthInteger>(_ value: T) {
            output.storeBytes(of: value.littleEndian, toByteOffset: position, as: T.self)
            position += MemoryLayout<T>.size
        }
        func append(_ bytes: UnsafeRawBufferPointer) {
            guard let base = bytes.baseAddress, bytes.count > 0 else { return }
            (output.baseAddress! + position).copyMemory(from: base, byteCount: bytes.count)
            position += bytes.count
        }
        var flags: UInt8 = (isDeleted ? 1 : 0) | Self.compactLayout
        if expiration != 0 { flags |= Self.hasExpiration }
        if case .packed = revision { flags |= Self.packedRevision }
        append(flags)
        append(sequence)
        if expiration != 0 { append(expiration) }
        switch revision {
        case .packed(let generation, let digest):
            append(generation)
            append(digest.0)
            append(digest.1)
        case .text(let revisionID):
            var text = revisionID
            append(UInt16(text.utf8.count))  // the format holds ids up to 65,535 bytes
            text.withUTF8 { append(UnsafeRawBufferPointer($0)) }
        }
        append(body)
        precondition(position == output.count, "a record's layout and its bytes disagree")
    }

    private static let hasExpiration: UInt8 = 2
    private static let packedRevision: UInt8 = 4
    private static let compactLayout: UInt8 = 0x80

    init(isDeleted: Bool, sequence: UInt64, expiration: UInt64, revisionID: String, body: [UInt8]) {
        self.isDeleted = isDeleted
        self.sequence = sequence
        self.expiration = expiration
        self.revision = .text(revisionID)
        self.body = body
    }

    /// A record whose revision id is already in stored form (a new revision made here).
    init(isDeleted: Bool, sequence: UInt64, expiration: UInt64, revision: StoredRevisionID, body: [UInt8]) {
        self.isDeleted = isDeleted
        self.sequence = sequence
        self.expiration = expiration
        self.revision = revision
        self.body = body
    }

    init(decoding bytes: UnsafeRawBufferPointer) throws {
        var bodyStart = 0
        try self.init(decodingHeaderOf: bytes, bodyStart: &bodyStart)
        body = Array(bytes[bodyStart...])
    }

    /// The record `bytes` holds with its body left empty, and where the body begins: scans check
    /// a record's visibility (and their WHERE, in place) before copying its body out of the map.
    init(decodingHeaderOf bytes: UnsafeRawBufferPointer, bodyStart: inout Int) throws {
        var reader = ByteReader(bytes: bytes)
        let flags = try reader.read(UInt8.self)
        let compact = flags & Self.compactLayout != 0
        isDeleted = flags & 1 != 0
        sequence = try reader.read(UInt64.self)
        expiration = !compact || flags & Self.hasExpiration != 0 ? try reader.read(UInt64.self) : 0
        if compact && flags & Self.packedRevision != 0 {
            let generation = try reader.read(UInt32.self)
            revision = .packed(generation: generation, digest: (try reader.read(UInt64.self), try reader.read(UInt64.self)))
        } else {
            revision = .text(try reader.string(length: Int(try reader.read(UInt16.self))))
        }
        body = []
        bodyStart = reader.position
    }

    /// True when the document's expiration time has passed: it reads as absent until purged.
    /// `now` is read only for a record that has an expiration (a clock read per point read costs
    /// more than the check).
    func isExpired(now: @autoclosure () -> UInt64) -> Bool { expiration != 0 && expiration <= now() }

    /// THE visibility rule, the only place it is written: a reader sees a record that has not
    /// expired and is not deleted — or, when it asks for tombstones too, any unexpired record.
    func isVisible(now: @autoclosure () -> UInt64, includingDeleted: Bool = false) -> Bool {
        !isExpired(now: now()) && (includingDeleted || !isDeleted)
    }
}

/// A revision id as a record stores it: text, or the packed form of an id this library made
/// (``RevisionID/packed(_:)``), whose 16 digest bytes are kept as two little-endian words.
enum StoredRevisionID: Sendable {
    case text(String)
    case packed(generation: UInt32, digest: (UInt64, UInt64))

    /// The `<generation>-<digest>` text.
    var text: String {
        switch self {
        case .text(let text):
            return text
        case .packed(let generation, let digest):
            return RevisionID.text(generation: generation, digest: digest)
        }
    }
}

extension StoredRevisionID: Equatable {
    /// The same revision id, whichever form each side holds it in.
    static func == (lhs: StoredRevisionID, rhs: StoredRevisionID) -> Bool {
        if case .packed(let left, let leftDigest) = lhs, case .packed(let right, let rightDigest) = rhs {
            return left == right && leftDigest == rightDigest
        }
        return lhs.text == rhs.text
    }
}
