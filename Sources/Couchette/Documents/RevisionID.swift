/// Revision ids as the CouchDB replication protocol expects them: `<generation>-<32 hex digits>`.
///
/// The digest is MD5 (as CouchDB uses) over the deleted flag, the parent revision id and the
/// canonical body bytes, so the same edit made on two peers yields the same revision id.
enum RevisionID {
    /// The highest generation accepted or made: what the stored binary form holds (32 bits).
    /// Ids from peers above it are refused at the door (``generation(of:)`` is nil for them), so a
    /// peer cannot hand over a revision whose next edit would overflow.
    static let maximumGeneration = Int(UInt32.max)

    /// The id of a new revision of `parent` (nil: a new document).
    /// - Throws: `.invalidParameter` when `parent` is already at ``maximumGeneration``.
    static func make(parent: String?, deleted: Bool, body: [UInt8]) throws -> String {
        try makeStored(parent: parent, deleted: deleted, body: body).text
    }

    /// ``make(parent:deleted:body:)`` in the packed form a record stores, so a save formats the
    /// id once (for its caller) and never parses it back. The digest is computed over the pieces
    /// where they lie: no joined copy of the body.
    static func makeStored(parent: String?, deleted: Bool, body: [UInt8]) throws -> StoredRevisionID {
        guard var parent else { return try makeStored(parentGeneration: 0, parentText: nil, deleted: deleted, body: body) }
        let parentGeneration = generation(of: parent) ?? 0
        return try parent.withUTF8 { text in
            try makeStored(parentGeneration: parentGeneration, parentText: text, deleted: deleted, body: body)
        }
    }

    /// ``makeStored(parent:deleted:body:)`` for a parent as a record stores it: a packed id (an
    /// update of a document saved here) is formatted on the stack, not into a new string.
    static func makeStored(storedParent parent: StoredRevisionID?, deleted: Bool, body: [UInt8]) throws -> StoredRevisionID {
        switch parent {
        case nil:
            return try makeStored(parentGeneration: 0, parentText: nil, deleted: deleted, body: body)
        case .text(let text):
            return try makeStored(parent: text, deleted: deleted, body: body)
        case .packed(let generation, let digest):
            return try withUnsafeTemporaryAllocation(of: UInt8.self, capacity: maximumPackedLength) { buffer in
                let count = writeText(generation: generation, digest: digest, into: buffer)
                return try makeStored(
                    parentGeneration: Int(generation), parentText: UnsafeBufferPointer(rebasing: buffer[..<count]),
                    deleted: deleted, body: body)
            }
        }
    }

    /// The new revision of a parent of generation `parentGeneration` (0: none) whose id is
    /// `parentText` (nil: none): MD5 over the deleted flag, the parent id with its length, and the body.
    private static func makeStored(
        parentGeneration: Int, parentText: UnsafeBufferPointer<UInt8>?, deleted: Bool, body: [UInt8]
    ) throws -> StoredRevisionID {
        guard parentGeneration < maximumGeneration, let generation = UInt32(exactly: parentGeneration + 1) else {
            let parent = parentText.map { String(decoding: $0, as: UTF8.self) } ?? ""
            throw CouchetteError(
                .invalidParameter,
                "revision \(parent) is at generation \(maximumGeneration), the highest: the document cannot be edited further")
        }
        return .packed(generation: generation, digest: body.withUnsafeBytes { digest(parentText: parentText, deleted: deleted, body: $0) })
    }

    /// The digest of a revision: MD5 over the deleted flag, the parent id's length and UTF-8 bytes
    /// (nil: a zero length) and the body bytes, as two little-endian words.
    static func digest(parentText: UnsafeBufferPointer<UInt8>?, deleted: Bool, body: UnsafeRawBufferPointer) -> (UInt64, UInt64) {
        var md5 = PortableMD5()
        md5.update(byte: deleted ? 1 : 0)
        if let parentText {
            md5.update(byte: UInt8(truncatingIfNeeded: parentText.count))
            md5.update(UnsafeRawBufferPointer(parentText))
        } else {
            md5.update(byte: 0)
        }
        md5.update(body)
        return md5.finishWords()
    }

    /// The digest of generation 1 of a new document with `body`: what ``makeStored(parent:deleted:body:)``
    /// gives for no parent, computed where the body lies (bulk saves hash each body as soon as it is
    /// transcoded, while its bytes are still in the cache).
    static func newDocumentDigest(body: UnsafeRawBufferPointer) -> (UInt64, UInt64) {
        digest(parentText: nil, deleted: false, body: body)
    }

    /// The longest id ``packed(_:)`` accepts: 10 generation digits, a dash and 32 hex digits.
    static let maximumPackedLength = 43

    /// The longest revision id accepted from a peer, in UTF-8 bytes. Ids made here are at most 43
    /// bytes (CouchDB's and Couchbase Lite's are as short); a stored record holds an id's length
    /// in 16 bits, and a peer must not be able to make the store trap or hold megabyte ids.
    static let maximumLength = 1_024

    /// The generation number (the part before the dash), or nil when `revisionID` is malformed:
    /// not decimal digits, 0, above ``maximumGeneration``, or longer than ``maximumLength``.
    /// Every revision id received from a peer passes through here before it is stored.
    static func generation(of revisionID: String) -> Int? {
        guard revisionID.utf8.count <= maximumLength else { return nil }
        guard let dash = revisionID.utf8.firstIndex(of: UInt8(ascii: "-")) else { return nil }
        let digits = revisionID.utf8[..<dash]
        // At most 10 digits (UInt32.max has 10), so the sum below cannot overflow.
        guard !digits.isEmpty, digits.count <= 10,
            digits.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) })
        else { return nil }
        let number = digits.reduce(0) { $0 * 10 + Int($1 - UInt8(ascii: "0")) }
        return (1...maximumGeneration).contains(number) ? number : nil
    }

    /// The digest part (after the dash).
    static func digest(of revisionID: String) -> Substring {
        guard let dash = revisionID.firstIndex(of: "-") else { return Substring(revisionID) }
        return revisionID[revisionID.index(after: dash)...]
    }

    static func md5(_ bytes: [UInt8]) -> [UInt8] { PortableMD5.digest(bytes) }

    static func hex(_ bytes: [UInt8]) -> String {
        String(unsafeUninitializedCapacity: bytes.count * 2) { output in
            let digits: StaticString = "0123456789abcdef"
            for (index, byte) in bytes.enumerated() {
                output[2 * index] = digits.utf8Start[Int(byte >> 4)]
                output[2 * index + 1] = digits.utf8Start[Int(byte & 0x0F)]
            }
            return bytes.count * 2
        }
    }

    /// 16 digest bytes (as ``packed(_:)`` gives them) as the two little-endian words a packed id keeps.
    static func digestWords(_ digest: [UInt8]) -> (UInt64, UInt64) {
        digest.withUnsafeBytes {
            (
                UInt64(littleEndian: $0.loadUnaligned(fromByteOffset: 0, as: UInt64.self)),
                UInt64(littleEndian: $0.loadUnaligned(fromByteOffset: 8, as: UInt64.self))
            )
        }
    }

    /// The binary form of a `<generation>-<32 lowercase hex digits>` id (every id this library
    /// makes), which ``unpacked(generation:digest:)`` turns back into the same string; nil for any
    /// other shape (ids received from other peers may differ), which is then stored as text.
    static func packed(_ revisionID: String) -> (generation: UInt32, digest: [UInt8])? {
        var revisionID = revisionID
        return revisionID.withUTF8 { utf8 -> (generation: UInt32, digest: [UInt8])? in
            // At most 10 generation digits (UInt32.max has 10), a dash and 32 hex digits.
            guard utf8.count >= 34, utf8.count <= 43, utf8[0] != UInt8(ascii: "0") else { return nil }
            let dash = utf8.count - 33
            guard utf8[dash] == UInt8(ascii: "-") else { return nil }
            var generation: UInt64 = 0
            for byte in utf8[..<dash] {
                guard (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) else { return nil }
                generation = generation * 10 + UInt64(byte - UInt8(ascii: "0"))
            }
            guard let generation = UInt32(exactly: generation) else { return nil }
            func nibble(_ byte: UInt8) -> UInt8? {
                switch byte {
                case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
                case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
                default: nil
                }
            }
            var valid = true
            let digest = [UInt8](unsafeUninitializedCapacity: 16) { buffer, count in
                for index in 0..<16 {
                    guard let high = nibble(utf8[dash + 1 + 2 * index]), let low = nibble(utf8[dash + 2 + 2 * index]) else {
                        valid = false
                        break
                    }
                    buffer[index] = high << 4 | low
                    count = index + 1
                }
            }
            return valid ? (generation, digest) : nil
        }
    }

    /// The id made by ``packed(_:)``.
    static func unpacked(generation: UInt32, digest: [UInt8]) -> String {
        "\(generation)-" + hex(digest)
    }

    /// ``unpacked(generation:digest:)`` for a digest kept as two little-endian words, written in
    /// one allocation (reads format the id of every record they return).
    static func text(generation: UInt32, digest: (UInt64, UInt64)) -> String {
        String(unsafeUninitializedCapacity: maximumPackedLength) { writeText(generation: generation, digest: digest, into: $0) }
    }

    /// Writes the text of ``text(generation:digest:)`` into `output` (at least
    /// ``maximumPackedLength`` bytes) and returns its length.
    private static func writeText(generation: UInt32, digest: (UInt64, UInt64), into output: UnsafeMutableBufferPointer<UInt8>) -> Int {
        var digits = 1
        var rest = generation / 10
        while rest > 0 { digits += 1; rest /= 10 }
        var value = generation
        for index in stride(from: digits - 1, through: 0, by: -1) {
            output[index] = UInt8(ascii: "0") + UInt8(value % 10)
            value /= 10
        }
        output[digits] = UInt8(ascii: "-")
        let hexDigits: StaticString = "0123456789abcdef"
        withUnsafeBytes(of: (digest.0.littleEndian, digest.1.littleEndian)) { bytes in
            for (index, byte) in bytes.enumerated() {
                output[digits + 1 + 2 * index] = hexDigits.utf8Start[Int(byte >> 4)]
                output[digits + 2 + 2 * index] = hexDigits.utf8Start[Int(byte & 0x0F)]
            }
        }
        return digits + 33
    }

    /// Orders revisions the way CouchDB picks a winner among equals: higher generation first, then
    /// the lexicographically higher digest.
    static func isHigher(_ lhs: String, than rhs: String) -> Bool {
        let left = generation(of: lhs) ?? 0
        let right = generation(of: rhs) ?? 0
        if left != right { return left > right }
        return digest(of: lhs) > digest(of: rhs)
    }
}
