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
        let packed = RevisionID.packed(revisionID)
        var flags: UInt8 = (isDeleted ? 1 : 0) | Self.compactLayout
        if expiration != 0 { flags |= Self.hasExpiration }
        if packed != nil { flags |= Self.packedRevision }
        var bytes: [UInt8] = [flags]
        bytes.reserveCapacity(29 + revisionID.utf8.count + body.count)
        withUnsafeBytes(of: sequence.littleEndian) { bytes.append(contentsOf: $0) }
        if expiration != 0 { withUnsafeBytes(of: expiration.littleEndian) { bytes.append(contentsOf: $0) } }
        if let packed {
            withUnsafeBytes(of: packed.generation.littleEndian) { bytes.append(contentsOf: $0) }
            bytes.append(contentsOf: packed.digest)
        } else {
            let revision = Array(revisionID.utf8)
            withUnsafeBytes(of: UInt16(revision.count).littleEndian) { bytes.append(contentsOf: $0) }
            bytes.append(contentsOf: revision)
        }
        bytes.append(contentsOf: body)
        return bytes
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

    init(decoding bytes: UnsafeRawBufferPointer) throws {
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
        body = reader.rest()
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
            var bytes: [UInt8] = []
            bytes.reserveCapacity(16)
            withUnsafeBytes(of: digest.0.littleEndian) { bytes.append(contentsOf: $0) }
            withUnsafeBytes(of: digest.1.littleEndian) { bytes.append(contentsOf: $0) }
            return RevisionID.unpacked(generation: generation, digest: bytes)
        }
    }
}
