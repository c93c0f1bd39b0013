import CCrypto
import Foundation

/// Computes the SHA-1 and MD5 digests of bytes fed in pieces: blob contents are never held whole.
///
/// SHA-1 names blobs made here (Couchbase Lite's `sha1-<base64>`); MD5 is what CouchDB names
/// attachments by (`md5-<base64>`), so a blob pulled from CouchDB can keep its digest. OpenSSL can
/// refuse MD5 (a FIPS-only configuration): ``md5`` is then nil and only SHA-1 names are possible.
final class ContentDigest {
    private let sha1: OpaquePointer
    private var md5Context: OpaquePointer?
    private(set) var length: UInt64 = 0

    /// `md5`: also compute MD5 (needed only to check content a peer named by an `md5-` digest).
    init(md5: Bool = true) throws {
        guard let context = EVP_MD_CTX_new() else { throw CouchetteError(.io, "OpenSSL cannot compute SHA-1 digests") }
        // Thrown before `sha1` is set, so `deinit` does not run: the context is freed here.
        guard EVP_DigestInit_ex(context, EVP_sha1(), nil) == 1 else {
            EVP_MD_CTX_free(context)
            throw CouchetteError(.io, "OpenSSL cannot compute SHA-1 digests")
        }
        sha1 = context
        if md5, let context = EVP_MD_CTX_new() {
            if EVP_DigestInit_ex(context, EVP_md5(), nil) == 1 { md5Context = context } else { EVP_MD_CTX_free(context) }
        }
    }

    deinit {
        EVP_MD_CTX_free(sha1)
        if let md5Context { EVP_MD_CTX_free(md5Context) }
    }

    func update(_ bytes: UnsafeRawBufferPointer) {
        guard let base = bytes.baseAddress, bytes.count > 0 else { return }
        EVP_DigestUpdate(sha1, base, bytes.count)
        if let md5Context { EVP_DigestUpdate(md5Context, base, bytes.count) }
        length += UInt64(bytes.count)
    }

    /// The digests, as `sha1-<base64>` and `md5-<base64>` (nil when MD5 is unavailable). Call once.
    func finish() -> (sha1: String, md5: String?) {
        (Self.final(sha1, prefix: "sha1-") ?? "", md5Context.flatMap { Self.final($0, prefix: "md5-") })
    }

    private static func final(_ context: OpaquePointer, prefix: String) -> String? {
        var digest = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var size: UInt32 = 0
        guard EVP_DigestFinal_ex(context, &digest, &size) == 1 else { return nil }
        return prefix + Data(digest[..<Int(size)]).base64EncodedString()
    }

    /// The digest of `data` in one call.
    static func sha1(of data: Data) throws -> String {
        let digest = try ContentDigest(md5: false)
        data.withUnsafeBytes { digest.update($0) }
        return digest.finish().sha1
    }
}
