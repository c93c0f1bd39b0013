import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Blob contents, one file per digest in the database folder's `blobs/` directory.
///
/// Files rather than LMDB values: a blob is streamed in and out in ``chunkSize`` pieces, so a
/// 500 MB blob costs a few chunks of memory (an LMDB write transaction keeps every dirty page of
/// a large value in anonymous memory until it commits), and deleting content never leaves free
/// pages behind in `data.mdb`. See CONTRIBUTING ("Where blob contents live").
///
/// A file is named after its digest (`sha1-<base64url>` or `md5-<base64url>`), so equal contents
/// are stored once. It is written to a temporary file, synced, then renamed into place — before
/// the document that references it commits: a crash leaves at most an unreferenced file, which
/// compaction deletes. With `fullSync` the directory is synced too, so the rename itself survives
/// an OS crash.
final class BlobStore: Sendable {
    /// Bytes read or written per step when streaming content.
    static let chunkSize = 256 * 1024
    private static let temporaryPrefix = ".tmp-"

    let directory: String
    let fullSync: Bool
    /// Digests written by saves that have not committed yet (count per digest) and temporary files
    /// being written: compaction keeps both, since the document that will reference them is
    /// still on its way to the writer.
    private let inFlight = Locked<InFlight>(InFlight())

    private struct InFlight {
        var digests: [String: Int] = [:]
        var temporaries: Set<String> = []
    }

    init(databasePath: String, fullSync: Bool) {
        self.directory = databasePath + "/blobs"
        self.fullSync = fullSync
    }

    // MARK: - Open stores

    /// The stores of the open databases: a blob read from a document finds its content in any of
    /// them (content is addressed by digest, so every store holding a digest holds the same bytes).
    private static let openStores = Locked<[ObjectIdentifier: BlobStore]>([:])

    func registerOpen() { Self.openStores.withLock { $0[ObjectIdentifier(self)] = self } }
    func unregisterOpen() { _ = Self.openStores.withLock { $0.removeValue(forKey: ObjectIdentifier(self)) } }

    static func openStore(holding digest: String) -> BlobStore? {
        openStores.withLock { Array($0.values) }.first { $0.contains(digest) }
    }

    // MARK: - Names

    /// True for a digest this store can name a file after: `sha1-` or `md5-` and the base64 of a
    /// digest of that algorithm's size.
    static func isValidDigest(_ digest: String) -> Bool { fileName(for: digest) != nil }

    private static func fileName(for digest: String) -> String? {
        let parts: (String, Int)
        if digest.hasPrefix("sha1-") { parts = ("sha1-", 20) } else if digest.hasPrefix("md5-") { parts = ("md5-", 16) } else { return nil }
        let encoded = digest.dropFirst(parts.0.count)
        guard let raw = Data(base64Encoded: String(encoded)), raw.count == parts.1 else { return nil }
        let safe = raw.base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
        return parts.0 + safe
    }

    private static func digest(forFileName name: String) -> String? {
        guard name.hasPrefix("sha1-") || name.hasPrefix("md5-") else { return nil }
        let digest = name.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
            .replacingOccurrences(of: "sha1+", with: "sha1-").replacingOccurrences(of: "md5+", with: "md5-")
        return isValidDigest(digest) ? digest : nil
    }

    /// The file holding `digest`'s content (which may not exist); nil for a malformed digest.
    func path(for digest: String) -> String? {
        Self.fileName(for: digest).map { directory + "/" + $0 }
    }

    /// The stored length of `digest`'s content, or nil when this store does not hold it.
    func length(of digest: String) -> UInt64? {
        guard let path = path(for: digest) else { return nil }
        var status = stat()
        guard stat(path, &status) == 0, (status.st_mode & S_IFMT) == S_IFREG else { return nil }
        return UInt64(status.st_size)
    }

    func contains(_ digest: String) -> Bool { length(of: digest) != nil }

    /// Every digest stored, in no particular order.
    func allDigests() throws -> [String] {
        guard FileManager.default.fileExists(atPath: directory) else { return [] }
        do {
            return try FileManager.default.contentsOfDirectory(atPath: directory).compactMap(Self.digest(forFileName:))
        } catch {
            throw CouchetteError(.io, "cannot list \(directory): \(error.localizedDescription)")
        }
    }

    /// Copies every stored content (not temporary files) into the `blobs/` directory of the
    /// database folder `databasePath`.
    func copyContents(to databasePath: String) throws {
        let names = try allDigests().compactMap(Self.fileName(for:))
        guard !names.isEmpty else { return }
        let target = databasePath + "/blobs"
        do {
            try FileManager.default.createDirectory(atPath: target, withIntermediateDirectories: true)
            for name in names { try FileManager.default.copyItem(atPath: directory + "/" + name, toPath: target + "/" + name) }
        } catch {
            throw CouchetteError(.io, "cannot copy blob contents to \(target): \(error.localizedDescription)")
        }
    }

    // MARK: - Writing

    /// A writer for new content; ``BlobWriter/finish(expecting:encodedMD5:)`` moves it into
    /// place. `expecting`: the digest the content will be checked against, if known (an `md5-`
    /// one makes the writer compute MD5 as well as SHA-1, and, for content of a type CouchDB
    /// compresses (`contentType`), the MD5 CouchDB names it by compressed).
    func makeWriter(expecting expected: String? = nil, contentType: String? = nil) throws -> BlobWriter {
        try ensureDirectory()
        let name = Self.temporaryPrefix + UUID().uuidString
        inFlight.withLock { _ = $0.temporaries.insert(name) }
        let md5 = expected?.hasPrefix("md5-") == true
        do {
            return try BlobWriter(
                store: self, temporaryPath: directory + "/" + name, computingMD5: md5,
                couchDBGzip: md5 && CouchDBGzipDigest.isCompressible(contentType))
        } catch {
            inFlight.withLock { _ = $0.temporaries.remove(name) }
            throw error
        }
    }

    /// Stores `data`; returns its SHA-1 digest and length.
    func write(_ data: Data) throws -> BlobWriter.Stored {
        let writer = try makeWriter()
        var offset = 0
        while offset < data.count {
            let end = min(offset + Self.chunkSize, data.count)
            try data[offset..<end].withUnsafeBytes { try writer.append($0) }
            offset = end
        }
        return try writer.finish()
    }

    /// Stores the content of the file at `url`, read in chunks; returns its SHA-1 digest and length.
    func write(contentsOf url: URL) throws -> BlobWriter.Stored {
        let writer = try makeWriter()
        try BlobReader(path: url.path).forEachChunk { try writer.append($0) }
        return try writer.finish()
    }

    private func ensureDirectory() throws {
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        } catch {
            throw CouchetteError(.io, "cannot create \(directory): \(error.localizedDescription)")
        }
    }

    /// Moves a finished temporary file to `digest`'s name (or drops it when that content is
    /// already stored), syncing the directory when the database asks for full sync. On success
    /// the digest is held (see ``hold(_:)``): the caller releases it once the document that
    /// references it has committed.
    func install(temporaryPath: String, as digest: String) throws {
        defer { forgetTemporary(temporaryPath) }
        guard let destination = path(for: digest) else {
            unlink(temporaryPath)
            throw CouchetteError(.invalidParameter, "'\(digest)' is not a blob digest")
        }
        hold([digest])
        if contains(digest) {
            unlink(temporaryPath)
            return
        }
        do {
            guard rename(temporaryPath, destination) == 0 else {
                let reason = String(cString: strerror(errno))
                unlink(temporaryPath)
                throw CouchetteError(.io, "cannot move blob into \(destination): \(reason)")
            }
            if fullSync { try Self.syncDirectory(directory) }
        } catch {
            release([digest])
            throw error
        }
    }

    private static func syncDirectory(_ path: String) throws {
        let descriptor = open(path, O_RDONLY | O_DIRECTORY)
        guard descriptor >= 0 else { throw CouchetteError(.io, "cannot open \(path): \(String(cString: strerror(errno)))") }
        defer { close(descriptor) }
        guard fsync(descriptor) == 0 else { throw CouchetteError(.io, "cannot sync \(path): \(String(cString: strerror(errno)))") }
    }

    /// A temporary file that is gone (installed or abandoned) no longer needs protecting.
    func forgetTemporary(_ path: String) {
        let name = (path as NSString).lastPathComponent
        inFlight.withLock { _ = $0.temporaries.remove(name) }
    }

    // MARK: - In-flight saves and deletion

    /// Marks digests as about to be referenced by a commit; compaction keeps them until
    /// ``release(_:)``.
    func hold(_ digests: [String]) {
        guard !digests.isEmpty else { return }
        inFlight.withLock { state in for digest in digests { state.digests[digest, default: 0] += 1 } }
    }

    func release(_ digests: [String]) {
        guard !digests.isEmpty else { return }
        inFlight.withLock { state in
            for digest in digests {
                let left = (state.digests[digest] ?? 1) - 1
                state.digests[digest] = left > 0 ? left : nil
            }
        }
    }

    /// Deletes every stored digest not in `referenced` (and not held by a save in flight), and
    /// leftover temporary files of interrupted writes. Returns how many contents were deleted.
    /// Runs only while no other process has the database open (compaction's condition), so no
    /// other writer's temporary file can be removed; files changed after `since` (the start of
    /// the scan that found `referenced`) are kept, in case a process that opened and closed the
    /// database meanwhile committed a reference to them.
    @discardableResult
    func removeUnreferenced(keeping referenced: Set<String>, since: Date) throws -> Int {
        guard FileManager.default.fileExists(atPath: directory) else { return 0 }
        let names: [String]
        do {
            names = try FileManager.default.contentsOfDirectory(atPath: directory)
        } catch {
            throw CouchetteError(.io, "cannot list \(directory): \(error.localizedDescription)")
        }
        let (held, writing) = inFlight.withLock { (Set($0.digests.keys), $0.temporaries) }
        var removed = 0
        for name in names {
            let path = directory + "/" + name
            var status = stat()
            guard stat(path, &status) == 0,
                Double(status.st_mtim.tv_sec) + Double(status.st_mtim.tv_nsec) / 1e9 < since.timeIntervalSince1970
            else { continue }
            if name.hasPrefix(Self.temporaryPrefix) {
                if !writing.contains(name) { unlink(path) }
                continue
            }
            guard let digest = Self.digest(forFileName: name), !referenced.contains(digest), !held.contains(digest) else { continue }
            if unlink(path) == 0 { removed += 1 }
        }
        return removed
    }
}
