import CZlib
import Foundation

/// Decodes a gzip stream piece by piece (zlib's `inflate`), as CouchDB sends compressible
/// attachments in multipart bodies (`Content-Encoding: gzip`). Output is produced in bounded
/// chunks and counted: the decoder refuses to produce more than `maximumOutput` bytes, so a
/// small compressed part cannot expand into unbounded memory or disk (a "zip bomb").
///
/// ```swift
/// let decoder = try GzipDecoder(maximumOutput: 1 << 20)
/// try decoder.decode(compressed) { plain in content.append(plain) }
/// try decoder.finish()
/// ```
final class GzipDecoder {
    private var stream = z_stream()
    private var ended = false
    private var open = false
    private let maximumOutput: UInt64
    private(set) var produced: UInt64 = 0

    /// - Throws: `.io` when zlib cannot start.
    init(maximumOutput: UInt64) throws {
        self.maximumOutput = maximumOutput
        // 15 + 16: a 32 KiB window, and a gzip header and trailer rather than zlib's own.
        let status = inflateInit2_(&stream, 15 + 16, ZLIB_VERSION, Int32(MemoryLayout<z_stream>.size))
        guard status == Z_OK else { throw CouchetteError(.io, "zlib could not start decoding gzip (status \(status))") }
        open = true
    }

    deinit {
        if open { inflateEnd(&stream) }
    }

    /// True once the gzip trailer was read.
    var isComplete: Bool { ended }

    /// Decodes `input`, calling `output` with each decoded chunk.
    /// - Throws: `.invalidParameter` for data that is not gzip, bytes after the end of the
    ///   stream, or output past `maximumOutput`; whatever `output` throws.
    func decode(_ input: Data, _ output: (Data) throws -> Void) throws {
        guard !input.isEmpty else { return }
        guard !ended else { throw CouchetteError(.invalidParameter, "gzip content continues after its end") }
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        try input.withUnsafeBytes { raw in
            guard let base = raw.bindMemory(to: Bytef.self).baseAddress else { return }
            stream.next_in = UnsafeMutablePointer(mutating: base)
            stream.avail_in = uInt(raw.count)
            defer {
                stream.next_in = nil
                stream.avail_in = 0
            }
            repeat {
                let status = chunk.withUnsafeMutableBufferPointer { buffer -> Int32 in
                    stream.next_out = buffer.baseAddress
                    stream.avail_out = uInt(buffer.count)
                    return inflate(&stream, Z_NO_FLUSH)
                }
                let count = chunk.count - Int(stream.avail_out)
                if count > 0 {
                    produced += UInt64(count)
                    guard produced <= maximumOutput else {
                        throw CouchetteError(.invalidParameter, "gzip content decodes to more than the \(maximumOutput) bytes declared")
                    }
                    try output(Data(chunk[0..<count]))
                }
                switch status {
                case Z_STREAM_END:
                    ended = true
                    if stream.avail_in > 0 { throw CouchetteError(.invalidParameter, "gzip content continues after its end") }
                    return
                case Z_OK:
                    continue
                case Z_BUF_ERROR where stream.avail_in == 0:
                    return
                default:
                    throw CouchetteError(.invalidParameter, "content is not valid gzip (zlib status \(status))")
                }
            } while stream.avail_in > 0 || stream.avail_out == 0
        }
    }

    /// The input ended.
    /// - Throws: `.invalidParameter` when the gzip stream is incomplete.
    func finish() throws {
        guard ended else { throw CouchetteError(.invalidParameter, "gzip content ends before its trailer") }
    }
}
