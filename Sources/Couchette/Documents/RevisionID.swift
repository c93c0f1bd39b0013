import CCrypto

/// Revision ids as the CouchDB replication protocol expects them: `<generation>-<32 hex digits>`.
///
/// The digest is MD5 (as CouchDB uses) over the deleted flag, the parent revision id and the
/// canonical body bytes, so the same edit made on two peers yields the same revision id.
enum RevisionID {
    static func make(parent: String?, deleted: Bool, body: [UInt8]) -> String {
        let generation = (parent.flatMap(generation(of:)) ?? 0) + 1
        var input: [UInt8] = [deleted ? 1 : 0]
        let parentBytes = Array((parent ?? "").utf8)
        input.append(UInt8(truncatingIfNeeded: parentBytes.count))
        input.append(contentsOf: parentBytes)
        input.append(contentsOf: body)
        return "\(generation)-" + hex(md5(input))
    }

    /// The generation number (the part before the dash), or nil when `revisionID` is malformed.
    static func generation(of revisionID: String) -> Int? {
        guard let dash = revisionID.firstIndex(of: "-") else { return nil }
        return Int(revisionID[..<dash]).flatMap { $0 > 0 ? $0 : nil }
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

    /// Orders revisions the way CouchDB picks a winner among equals: higher generation first, then
    /// the lexicographically higher digest.
    static func isHigher(_ lhs: String, than rhs: String) -> Bool {
        let left = generation(of: lhs) ?? 0
        let right = generation(of: rhs) ?? 0
        if left != right { return left > right }
        return digest(of: lhs) > digest(of: rhs)
    }
}
