import CCrypto

/// Revision ids as the CouchDB replication protocol expects them: `<generation>-<32 hex digits>`.
///
/// The digest is MD5 (as CouchDB uses) over the deleted flag, the parent revision id and the
/// canonical body bytes, so the same edit made on two peers yields the same revision id.
enum RevisionID {
    /// The highest generation accepted (what the packed form holds). A peer's id beyond it is
    /// malformed: the next edit could not count past it (`Int.max + 1` traps).
    static let maximumGeneration = Int(UInt32.max)

    /// The id of the revision that follows `parent` (nil: a first revision). Writers check
    /// ``checkCanFollow(_:)`` first: past ``maximumGeneration`` the id would not read back.
    static func make(parent: String?, deleted: Bool, body: [UInt8]) -> String {
        let generation = (parent.flatMap(generation(of:)) ?? 0) + 1
        var input: [UInt8] = [deleted ? 1 : 0]
        let parentBytes = Array((parent ?? "").utf8)
        input.append(UInt8(truncatingIfNeeded: parentBytes.count))
        input.append(contentsOf: parentBytes)
        input.append(contentsOf: body)
        return "\(generation)-" + hex(md5(input))
    }

    /// - Throws: `.invalidParameter` when `parent` is at ``maximumGeneration``: no revision can
    ///   follow it (only a peer can have sent such an id; none is made by editing).
    static func checkCanFollow(_ parent: String?) throws {
        guard let parent, let generation = generation(of: parent), generation >= maximumGeneration else { return }
        throw CouchetteError(.invalidParameter, "revision \(parent) is at the highest generation (\(maximumGeneration)): no revision can follow it")
    }

    /// The generation number (the part before the dash), or nil when `revisionID` is malformed
    /// (including a generation above ``maximumGeneration``).
    static func generation(of revisionID: String) -> Int? {
        guard let dash = revisionID.firstIndex(of: "-") else { return nil }
        return Int(revisionID[..<dash]).flatMap { $0 > 0 && $0 <= maximumGeneration ? $0 : nil }
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
              let generation = UInt32(String(decoding: utf8[..<dash], as: UTF8.self)) else { return nil }
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
