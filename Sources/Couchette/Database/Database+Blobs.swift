import Foundation

extension Database {
    /// Stores a blob's content without a document, so its dictionary can be set on documents
    /// later (for example through a model, or `setValue(blob.properties, forKey:)`), and sets its
    /// ``Blob/digest``. Content no revision references is deleted by the next
    /// `performMaintenance(type: .compact)`.
    ///
    /// ```swift
    /// let blob = Blob(contentType: "text/plain", data: Data("hello".utf8))
    /// try await db.saveBlob(blob: blob)
    /// print(blob.digest!)   // "sha1-qvTGHdzF6KLavt4PO0gs2a6pQ00="
    /// ```
    /// - Throws: `.notOpen` after close, `.io` (or `.full` when the disk is full) on file errors,
    ///   `.notFound` when a file blob's file is gone.
    public nonisolated(nonsending) func saveBlob(blob: Blob) async throws {
        try core.checkOpen()
        let digest = try blob.install(into: core.blobs)
        core.blobs.release([digest])
    }

    /// The blob a blob dictionary describes, when this database holds its content; nil when it
    /// does not (never saved here, or deleted by compaction).
    ///
    /// ```swift
    /// let again = try await db.getBlob(properties: blob.properties)
    /// ```
    /// - Throws: `.invalidParameter` when `properties` is not a blob dictionary (`@type: "blob"`,
    ///   a string `digest`, a `length`); `.notOpen` after close.
    public nonisolated(nonsending) func getBlob(properties: [String: Any]) async throws -> Blob? {
        try core.checkOpen()
        guard Blob.isBlob(properties: properties), let blob = Blob(properties: properties, store: core.blobs),
            let digest = blob.digest
        else {
            throw CouchetteError(
                .invalidParameter, "not a blob dictionary (needs \"@type\": \"blob\", a digest and a length): \(properties)")
        }
        guard core.blobs.length(of: digest) == blob.length else { return nil }
        return blob
    }

    /// Deletes blob contents no stored revision references. Called by compaction.
    func removeUnreferencedBlobs(thenCompact compact: (() throws -> Void) throws -> Void) throws {
        let started = Date()
        let referenced = try core.read { txn in try BlobReferenceScan(store: core.store, catalog: core.catalog.all).run(txn) }
        try compact { try core.blobs.removeUnreferenced(keeping: Set(referenced.keys), since: started) }
    }

    /// Verifies that every blob a stored revision references is in the store, with the length
    /// the document says and content matching its digest (read through, in chunks).
    func checkBlobs() throws {
        let referenced = try core.read { txn in try BlobReferenceScan(store: core.store, catalog: core.catalog.all).run(txn) }
        for (digest, place) in referenced.sorted(by: { $0.key < $1.key }) {
            let what = "blob \(place.reference.path) of \(place.document)"
            guard BlobStore.isValidDigest(digest), let path = core.blobs.path(for: digest) else {
                throw CouchetteError(.corruption, "\(what) has a malformed digest '\(digest)'")
            }
            guard let length = core.blobs.length(of: digest) else {
                throw CouchetteError(.corruption, "\(what): content \(digest) is missing")
            }
            if let expected = place.reference.length, expected != length {
                throw CouchetteError(.corruption, "\(what): content \(digest) has \(length) bytes, the document says \(expected)")
            }
            let computed = try ContentDigest()
            try BlobReader(path: path).forEachChunk { computed.update($0) }
            let actual = computed.finish()
            if actual.sha1 == digest || actual.md5 == digest { continue }
            // CouchDB names compressible attachments by the MD5 of their gzipped form, which
            // zlib reproduces from the content (see CouchDBGzipDigest): read it again through that.
            if digest.hasPrefix("md5-") && place.reference.isAttachment {
                let gzipped = try CouchDBGzipDigest()
                try BlobReader(path: path).forEachChunk { gzipped.update($0) }
                if gzipped.finish() == digest { continue }
            }
            throw CouchetteError(.corruption, "\(what): content does not match its digest \(digest)")
        }
    }
}

extension DatabaseCore {
    /// Stores the content of every unsaved blob set on `document` (before its body is encoded and
    /// committed) and returns the digests it references, held against compaction until
    /// ``BlobStore/release(_:)``.
    func installBlobs(of document: MutableDocument) throws -> [String] {
        try installBlobs(BlobSearch.blobs(in: document.root), owner: "document '\(document.id)'")
    }

    /// `owner` names the document in errors (made only then: saves call this for every document).
    func installBlobs(_ found: [Blob], owner: @autoclosure () -> String) throws -> [String] {
        guard !found.isEmpty else { return [] }
        var held: [String] = []
        do {
            for blob in found { held.append(try blob.install(into: blobs)) }
        } catch let error as CouchetteError {
            blobs.release(held)
            throw CouchetteError(error.code, "\(owner()): \(error.message)")
        }
        return held
    }
}
