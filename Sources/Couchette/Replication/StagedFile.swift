import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Attachment content received from a peer and kept in a temporary file until the receiving
/// database stores it (``AttachmentContent/install(into:digest:length:)`` copies it, verifying
/// its digest there). The file is deleted when the last reference goes away, so a pulled batch
/// leaves nothing behind whether it is stored, refused or abandoned.
///
/// ```swift
/// let writer = try StagedFile.Writer(directory: NSTemporaryDirectory())
/// try writer.append(chunk)
/// let content = AttachmentContent.staged(try writer.finish())
/// ```
final class StagedFile: Sendable {
    let path: String
    /// The MD5 (`md5-<base64>`) of the bytes as they arrived, when they arrived gzip-encoded and
    /// were staged decoded: CouchDB may name such content by it.
    let encodedMD5: String?

    private init(path: String, encodedMD5: String?) {
        self.path = path
        self.encodedMD5 = encodedMD5
    }

    deinit { unlink(path) }

    /// Writes one staged file piece by piece.
    final class Writer {
        private let path: String
        private var descriptor: Int32
        private(set) var length: UInt64 = 0

        /// - Throws: `.io` when the file cannot be created.
        init(directory: String) throws {
            path = directory + "/couchette-staged-" + UUID().uuidString
            descriptor = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
            guard descriptor >= 0 else { throw CouchetteError(.io, "cannot create \(path): \(String(cString: strerror(errno)))") }
        }

        deinit { abandon() }

        func append(_ data: Data) throws {
            guard descriptor >= 0 else { throw CouchetteError(.io, "staged file \(path) is closed") }
            if let error = data.withUnsafeBytes({ writeFully(descriptor, $0) }) {
                abandon()
                throw CouchetteError(
                    error == ENOSPC ? .full : .io, "cannot write received content to \(path): \(String(cString: strerror(error)))")
            }
            length += UInt64(data.count)
        }

        /// Closes the file and hands it over (deleted when the returned object goes).
        /// `encodedMD5`: see ``StagedFile/encodedMD5``.
        func finish(encodedMD5: String? = nil) throws -> StagedFile {
            guard descriptor >= 0 else { throw CouchetteError(.io, "staged file \(path) is closed") }
            close(descriptor)
            descriptor = -1
            return StagedFile(path: path, encodedMD5: encodedMD5)
        }

        func abandon() {
            guard descriptor >= 0 else { return }
            close(descriptor)
            descriptor = -1
            unlink(path)
        }
    }
}
