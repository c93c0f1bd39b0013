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
    /// CouchDB's name for the content compressed (see ``CouchDBGzipDigest``), when asked for.
    private let gzipDigest: CouchDBGzipDigest?

    /// `computingMD5`: also compute MD5 (to check an `md5-` digest); `couchDBGzip`: also the MD5
    /// of the content gzipped as CouchDB does (an `md5-` digest of a compressible type).
    init(store: BlobStore, temporaryPath: String, computingMD5: Bool, couchDBGzip: Bool = false) throws {
        self.store = store
        self.temporaryPath = temporaryPath
        self.digest = try ContentDigest(md5: computingMD5)
        self.gzipDigest = couchDBGzip ? try CouchDBGzipDigest() : nil
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
        gzipDigest?.update(bytes)
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
    /// filed under it. It matches when `expected` is its SHA-1 or MD5; CouchDB's name for it
    /// compressed, when the writer computes that (see ``CouchDBGzipDigest``); or `encodedMD5`,
    /// the MD5 of the gzip-encoded bytes it arrived as (CouchDB's name for what it sent).
    /// Content that does not match is deleted, never kept.
    /// - Throws: `.invalidParameter` when the content does not match `expected` (see
    ///   ``isDigestMismatch(_:)``), `.io` on file errors.
    func finish(expecting expected: String? = nil, encodedMD5: String? = nil) throws -> Stored {
        guard descriptor >= 0 else { throw CouchetteError(.io, "blob writer for \(temporaryPath) is closed") }
        let synced = fsync(descriptor) == 0
        let reason = String(cString: strerror(errno))
        close(descriptor)
        descriptor = -1
        guard synced else {
            discardTemporary()
            throw CouchetteError(.io, "cannot sync \(temporaryPath): \(reason)")
        }
        let computed = digest.finish()
        var name = computed.sha1
        if let expected {
            let compressed = gzipDigest?.finish()
            guard [computed.sha1, computed.md5, compressed, encodedMD5].contains(expected) else {
                discardTemporary()
                var actual = computed.md5 ?? computed.sha1
                if let compressed { actual += " (\(compressed) gzipped)" }
                if let encodedMD5 { actual += ", sent gzip-encoded as \(encodedMD5)" }
                throw CouchetteError(.invalidParameter, "content \(Self.mismatch) \(expected): it is \(actual)")
            }
            name = expected
        }
        try store.install(temporaryPath: temporaryPath, as: name)
        return Stored(digest: name, length: digest.length)
    }

    private static let mismatch = "does not match its digest"

    /// Whether `error` refused content that does not match the digest it came with (CouchDB
    /// answers such a body 400 `content_md5_mismatch`).
    static func isDigestMismatch(_ error: any Error) -> Bool {
        guard let error = error as? CouchetteError else { return false }
        return error.code == .invalidParameter && error.message.contains(mismatch)
    }

    private func discardTemporary() {
        unlink(temporaryPath)
        store.forgetTemporary(temporaryPath)
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
