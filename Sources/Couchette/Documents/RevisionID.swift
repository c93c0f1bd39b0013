import CCrypto

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
        let parentGeneration = parent.flatMap(generation(of:)) ?? 0
        guard parentGeneration < maximumGeneration else {
            throw CouchetteError(
                .invalidParameter,
                "revision \(parent ?? "") is at generation \(maximumGeneration), the highest: the document cannot be edited further")
        }
        let generation = parentGeneration + 1
        var input: [UInt8] = [deleted ? 1 : 0]
        let parentBytes = Array((parent ?? "").utf8)
        input.append(UInt8(truncatingIfNeeded: parentBytes.count))
        input.append(contentsOf: parentBytes)
        input.append(contentsOf: body)
        return "\(generation)-" + hex(md5(input))
    }

    /// The generation number (the part before the dash), or nil when `revisionID` is malformed:
    /// not decimal digits, 0, or above ``maximumGeneration``. Every revision id received from a
    /// peer passes through here before it is stored.
    static func generation(of revisionID: String) -> Int? {
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

    static func md5(_ bytes: [UInt8]) -> [UInt8] {
        var digest = [UInt8](repeating: 0, count: 16)
        var length: UInt32 = 0
        let ok = bytes.withUnsafeBytes { input in
            EVP_Digest(input.baseAddress, input.count, &digest, &length, EVP_md5(), nil)
        }
        // OpenSSL can refuse MD5 (a FIPS-only configuration): compute it ourselves then.
        return ok == 1 && length == 16 ? digest : PortableMD5.digest(bytes)
    }

    static func hex(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var output: [UInt8] = []
        output.reserveCapacity(bytes.count * 2)
        for byte in bytes {
            output.append(digits[Int(byte >> 4)])
            output.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: output, as: UTF8.self)
    }

    /// The binary form of a `<generation>-<32 lowercase hex digits>` id (every id this library
    /// makes), which ``unpacked(generation:digest:)`` turns back into the same string; nil for any
    /// other shape (ids received from other peers may differ), which is then stored as text.
    static func packed(_ revisionID: String) -> (generation: UInt32, digest: [UInt8])? {
        let utf8 = Array(revisionID.utf8)
        guard let dash = utf8.firstIndex(of: UInt8(ascii: "-")), utf8.count - dash - 1 == 32,
            dash > 0, utf8[0] != UInt8(ascii: "0"),
            utf8[..<dash].allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }),
            let generation = UInt32(String(decoding: utf8[..<dash], as: UTF8.self))
        else { return nil }
        func nibble(_ byte: UInt8) -> UInt8? {
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
            default: nil
            }
        }
        var digest: [UInt8] = []
        digest.reserveCapacity(16)
        var position = dash + 1
        while position < utf8.count {
            guard let high = nibble(utf8[position]), let low = nibble(utf8[position + 1]) else { return nil }
            digest.append(high << 4 | low)
            position += 2
        }
        return (generation, digest)
    }

    static func unpacked(generation: UInt32, digest: [UInt8]) -> String {
        "\(generation)-" + hex(digest)
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
