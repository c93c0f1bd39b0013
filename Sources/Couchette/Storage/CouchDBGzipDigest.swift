import CCrypto
import CZlib
import Foundation

/// The name CouchDB gives content it stores compressed: the MD5 of the content gzipped as
/// CouchDB gzips it (zlib's deflate at level 8, its default `compression_level`, with a gzip
/// header and trailer), computed piece by piece as the content streams in.
///
/// CouchDB compresses attachments of its `compressible_types` (by default `text/*`,
/// `application/javascript`, `application/json`, `application/xml`) and names them by the
/// MD5 of the compressed bytes, yet sends them decoded as inline base64 (and to clients that do
/// not take gzip). zlib produces the same bytes here — every such digest in the recorded
/// CouchDB 3.5 exchanges is reproduced — so a name CouchDB gave can be checked exactly against
/// the decoded content instead of being taken on trust.
///
/// ```swift
/// let digest = try CouchDBGzipDigest()
/// data.withUnsafeBytes { digest.update($0) }
/// let name = digest.finish()  // "md5-q2rWVu3cEfS8tvcpgnUN8Q==" for "first attachment"
/// ```
final class CouchDBGzipDigest {
    private var stream = z_stream()
    private let md5: OpaquePointer
    private var open = false
    private var output = [UInt8](repeating: 0, count: 64 * 1024)

    /// - Throws: `.io` when zlib or OpenSSL's MD5 cannot start.
    init() throws {
        guard let context = EVP_MD_CTX_new() else { throw CouchetteError(.io, "OpenSSL cannot compute MD5 digests") }
        // From here every stored property is set: a throw runs `deinit`, which frees the context
        // (freeing it here as well would free it twice) and ends the stream only once `open`.
        md5 = context
        guard EVP_DigestInit_ex(context, EVP_md5(), nil) == 1 else {
            throw CouchetteError(.io, "OpenSSL cannot compute MD5 digests")
        }
        // Level 8, a 32 KiB window with a gzip wrapper (15 + 16), memory level 8: CouchDB's.
        let status = deflateInit2_(&stream, 8, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY, ZLIB_VERSION, Int32(MemoryLayout<z_stream>.size))
        guard status == Z_OK else {
            throw CouchetteError(.io, "zlib could not start compressing (status \(status))")
        }
        open = true
    }

    deinit {
        if open { deflateEnd(&stream) }
        EVP_MD_CTX_free(md5)
    }

    /// Whether CouchDB compresses content of this type by default (its `compressible_types`).
    static func isCompressible(_ contentType: String?) -> Bool {
        guard let contentType else { return false }
        let type = contentType.split(separator: ";", maxSplits: 1).first.map { $0.trimmingCharacters(in: .whitespaces).lowercased() } ?? ""
        return type.hasPrefix("text/") || ["application/javascript", "application/json", "application/xml"].contains(type)
    }

    /// Compresses `bytes` and hashes what comes out.
    func update(_ bytes: UnsafeRawBufferPointer) {
        guard open, let base = bytes.bindMemory(to: Bytef.self).baseAddress, bytes.count > 0 else { return }
        // Pieces are at most a blob chunk; zlib counts in 32 bits.
        var offset = 0
        while offset < bytes.count {
            let count = min(bytes.count - offset, 1 << 30)
            stream.next_in = UnsafeMutablePointer(mutating: base + offset)
            stream.avail_in = uInt(count)
            deflateAll(Z_NO_FLUSH)
            offset += count
        }
        stream.next_in = nil
    }

    /// The `md5-<base64>` name, once all content was given; nil when zlib failed. Call once.
    func finish() -> String? {
        guard open else { return nil }
        let ended = deflateAll(Z_FINISH)
        deflateEnd(&stream)
        open = false
        var digest = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var size: UInt32 = 0
        guard ended, EVP_DigestFinal_ex(md5, &digest, &size) == 1 else { return nil }
        return "md5-" + Data(digest[..<Int(size)]).base64EncodedString()
    }

    /// Runs deflate until it needs more input (or, finishing, until the stream ended), hashing
    /// its output. False when zlib reported an error.
    @discardableResult
    private func deflateAll(_ flush: Int32) -> Bool {
        while true {
            let status = output.withUnsafeMutableBufferPointer { buffer -> Int32 in
                stream.next_out = buffer.baseAddress
                stream.avail_out = uInt(buffer.count)
                return deflate(&stream, flush)
            }
            let produced = output.count - Int(stream.avail_out)
            if produced > 0 { output.withUnsafeBytes { _ = EVP_DigestUpdate(md5, $0.baseAddress, produced) } }
            switch status {
            case Z_STREAM_END: return true
            case Z_OK, Z_BUF_ERROR:
                // A full output buffer may hide more output; with room left, all input is taken
                // (finishing: the end is still to come, and Z_OK means progress).
                if stream.avail_out == 0 || (flush == Z_FINISH && status == Z_OK) { continue }
                return flush != Z_FINISH
            default: return false
            }
        }
    }
}
