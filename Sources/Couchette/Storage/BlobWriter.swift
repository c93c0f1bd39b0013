import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// New blob content on its way into a ``BlobStore``: appended piece by piece to a temporary file
/// while its digests are computed, then synced and renamed to its digest's name by
/// ``finish(expecting:)``. A writer dropped unfinished deletes its temporary file.
final class BlobWriter {
    /// What a finished write stored: the digest it is filed under and its length.
    struct Stored: Sendable, Equatable {
        let digest: String
        let length: UInt64
    }

    private let store: BlobStore
    private let temporaryPath: String
    private var descriptor: Int32
    private let digest: ContentDigest

    init(store: BlobStore, temporaryPath: String, computingMD5: Bool) throws {
        self.store = store
        self.temporaryPath = temporaryPath
        self.digest = try ContentDigest(md5: computingMD5)
        descriptor = open(temporaryPath, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else {
            throw CouchetteError(.io, "cannot create \(temporaryPath): \(String(cString: strerror(errno)))")
        }
    }

    deinit { abandon() }

    var length: UInt64 { digest.length }

    func append(_ bytes: UnsafeRawBufferPointer) throws {
        guard descriptor >= 0 else { throw CouchetteError(.io, "blob writer for \(temporaryPath) is closed") }
        digest.update(bytes)
        if let error = writeFully(descriptor, bytes) {
            abandon()
            throw CouchetteError(
                error == ENOSPC ? .full : .io, "cannot write blob content to \(temporaryPath): \(String(cString: strerror(error)))")
        }
    }

    func append(_ data: Data) throws {
        try data.withUnsafeBytes { try append($0) }
    }

    /// Syncs and files the content. Blobs made here are filed under their SHA-1 digest; with
    /// `expected` (a digest a peer sent: `sha1-…` or `md5-…`) the content must match it and is
    /// filed under it. One exception, `couchDBLength`: CouchDB stores compressible attachments
    /// gzipped and names them by the MD5 of the gzipped bytes, which cannot be recomputed from
    /// the content; such an `md5-` digest is accepted when the length is the one CouchDB declared.
    /// - Throws: `.invalidParameter` when the content does not match `expected`, `.io` on file errors.
    func finish(expecting expected: String? = nil, couchDBLength: UInt64? = nil) throws -> Stored {
        guard descriptor >= 0 else { throw CouchetteError(.io, "blob writer for \(temporaryPath) is closed") }
        let synced = fsync(descriptor) == 0
        let reason = String(cString: strerror(errno))
        close(descriptor)
        descriptor = -1
        guard synced else {
            unlink(temporaryPath)
            store.forgetTemporary(temporaryPath)
            throw CouchetteError(.io, "cannot sync \(temporaryPath): \(reason)")
        }
        let computed = digest.finish()
        var name = computed.sha1
        if let expected {
            let couchDBNamed = expected.hasPrefix("md5-") && couchDBLength == digest.length
            guard expected == computed.sha1 || expected == computed.md5 || couchDBNamed else {
                unlink(temporaryPath)
                store.forgetTemporary(temporaryPath)
                throw CouchetteError(
                    .invalidParameter,
                    "blob content does not match its digest \(expected) (it is \(computed.md5 ?? computed.sha1))")
            }
            name = expected
        }
        try store.install(temporaryPath: temporaryPath, as: name)
        return Stored(digest: name, length: digest.length)
    }

    /// Deletes the temporary file of an unfinished write.
    func abandon() {
        guard descriptor >= 0 else { return }
        close(descriptor)
        descriptor = -1
        unlink(temporaryPath)
        store.forgetTemporary(temporaryPath)
    }
}
