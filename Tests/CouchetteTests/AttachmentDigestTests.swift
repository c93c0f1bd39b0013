import Foundation
import Testing

@testable import Couchette

/// Attachment content received from a peer is checked against the digest it came with: a
/// multipart part by the MD5 of its bytes as they arrived (gzip-encoded ones included, as
/// CouchDB names compressible attachments), inline base64 by the digest of its content, and
/// inline content CouchDB marks `"encoding": "gzip"` (decoded, its digest of the gzipped form)
/// by its length. A mismatch is refused — by the listener with CouchDB's 400
/// `content_md5_mismatch`, by a pulling replicator as the document's error — and its content
/// is never kept.
@Suite(.tags(.concurrency, .sanitizeAddress)) struct AttachmentDigestTests {
    private static let text = "This is the attachment body.\n"

    /// The blob files a database holds (temporary files excluded).
    private static func blobFiles(_ db: Database) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: db.path + "blobs")) ?? []).filter { !$0.hasPrefix(".") }.sorted()
    }

    /// `body` with the one occurrence of `text` replaced, byte for byte (the body holds gzip bytes).
    private static func replacing(_ text: String, with replacement: String, in body: [UInt8]) throws -> [UInt8] {
        let needle = Array(text.utf8)
        let start = try #require(body.indices.first { body[$0...].starts(with: needle) }, "\(text) is not in the body")
        return Array(body[..<start]) + Array(replacement.utf8) + Array(body[(start + needle.count)...])
    }

    private static func md5(_ data: Data) throws -> String {
        let digest = try ContentDigest()
        data.withUnsafeBytes { digest.update($0) }
        return try #require(digest.finish().md5)
    }

    /// CouchDB's names for compressible content (the MD5 of its gzipped form) are reproduced from
    /// the decoded content, whole or fed in odd pieces; 3 MB of incompressible bytes (more output
    /// than one deflate buffer) give the same name either way.
    @Test func couchDBsGzipNamesAreReproduced() async throws {
        try await onAThreadOfItsOwn { () throws in
            func name(_ data: Data, piece: Int) throws -> String? {
                let digest = try CouchDBGzipDigest()
                var offset = 0
                while offset < data.count {
                    let end = min(offset + piece, data.count)
                    data[offset..<end].withUnsafeBytes { digest.update($0) }
                    offset = end
                }
                return digest.finish()
            }
            // a10 #6, b01 att1, b02 d07, a13 #2: what CouchDB 3.5 named these texts.
            let named: [(String, String)] = [
                ("first attachment", "md5-q2rWVu3cEfS8tvcpgnUN8Q=="),
                (String(repeating: "a small text attachment\n", count: 3), "md5-K75oKIhDeJO+qrOuX/Jktg=="),
                ("attachment added in the second run\n", "md5-v3jIPFq7Pb+D2XEHpCZ2nw=="),
                (String(repeating: Self.text, count: 4), "md5-6xzmfFSlFAe7NQJPVH3fgg=="),
            ]
            for (text, digest) in named {
                for piece in [1, 7, 1 << 20] { #expect(try name(Data(text.utf8), piece: piece) == digest, "\(text) in pieces of \(piece)") }
            }
            var generator = SystemRandomNumberGenerator()
            let noise = Data((0..<3_000_000).map { _ in UInt8.random(in: 0...255, using: &generator) })
            #expect(try name(noise, piece: 256 * 1024) == name(noise, piece: 3_000_000))
            #expect(CouchDBGzipDigest.isCompressible("text/plain; charset=utf-8") && CouchDBGzipDigest.isCompressible("application/json"))
            #expect(!CouchDBGzipDigest.isCompressible("image/png") && !CouchDBGzipDigest.isCompressible(nil))
        }
    }

    /// `a13` #14 (a multipart PUT whose attachment does not match its `md5-` digest) is refused
    /// with CouchDB's error and leaves no content behind; the same body with the right digest is
    /// stored. A gzip-encoded part of CouchDB's replicator (`b01`) is checked by the MD5 of its
    /// encoded bytes: stored as sent, refused with one digest character changed.
    @Test func multipartPartsAreCheckedByTheMD5OfTheirBytes() async throws {
        let a13 = try Transcript.load("a13-put-multipart-and-attachments")
        let wrong = try #require(a13.first { $0.seq == 14 })
        let body = String(decoding: try #require(wrong.requestBody), as: UTF8.self)
        let content = Data(String(repeating: Self.text, count: 4).utf8)
        #expect(body.contains(String(decoding: content, as: UTF8.self)) && body.contains("md5-AAAAAAAAAAAAAAAAAAAAAA=="))
        let b01 = try Transcript.load("b01-replicate-initial")
        let gzipPut = try #require(b01.first { $0.method == "PUT" && $0.path.hasPrefix("/dst/att1?") })
        let gzipBody = try #require(gzipPut.requestBody)
        let gzipDigest = "md5-K75oKIhDeJO+qrOuX/Jktg=="
        #expect(try Self.replacing(gzipDigest, with: gzipDigest, in: gzipBody) == gzipBody)
        try await withDatabase("t_mp") { db, _ in
            let collection = try db.defaultCollection()
            try await withListener([collection]) { _, base in
                let refused = try await replay(wrong, to: base)
                #expect(refused.status == 400 && refused.json?["error"] == .string("content_md5_mismatch"), "\(refused.text)")
                #expect(refused.text.contains("file.txt") && refused.text.contains("md5-AAAAAAAAAAAAAAAAAAAAAA=="), "\(refused.text)")
                #expect(try await collection.document(id: "doc4") == nil)
                #expect(Self.blobFiles(db).isEmpty)

                let right = body.replacingOccurrences(of: "md5-AAAAAAAAAAAAAAAAAAAAAA==", with: try Self.md5(content))
                let stored = try await replay(wrong, to: base, body: Array(right.utf8))
                #expect(stored.status == 201, "\(stored.text)")
                let blob = try #require(
                    try await collection.document(id: "doc4")?.dictionary(forKey: "_attachments")?.blob(forKey: "file.txt"))
                #expect(try await blob.content() == content)
                #expect(Self.blobFiles(db).count == 1)

                // The gzip part as CouchDB's replicator sent it, into a second database on its path.
                let accepted = try await replay(gzipPut, to: base, path: gzipPut.path.replacingOccurrences(of: "/dst/", with: "/t_mp/"))
                #expect(accepted.status == 201, "\(accepted.text)")
                let note = try #require(try await collection.document(id: "att1")?.dictionary(forKey: "_attachments"))
                #expect(note.dictionary(forKey: "note.txt")?.string(forKey: "digest") == gzipDigest)
                let tampered = try Self.replacing(
                    gzipDigest, with: "md5-K75oKIhDeJO+qrOuX/Jkta==", in: try Self.replacing("\"att1\"", with: "\"att9\"", in: gzipBody))
                let refusedGzip = try await replay(gzipPut, to: base, path: "/t_mp/att9?new_edits=false", body: tampered)
                #expect(refusedGzip.status == 400 && refusedGzip.json?["error"] == .string("content_md5_mismatch"), "\(refusedGzip.text)")
                #expect(try await collection.document(id: "att9") == nil)
                #expect(Self.blobFiles(db).count == 2)
            }
        }
    }

    /// `_bulk_docs` with `new_edits: false` and inline base64: content matching its digest is
    /// stored — by its own MD5, or for a type CouchDB compresses by CouchDB's name for it
    /// gzipped (a10 #7 sends "first attachment" as text/plain so, decoded); a wrong digest, or
    /// CouchDB's gzip name on a type CouchDB never compresses, fails that document with
    /// `content_md5_mismatch`.
    @Test func inlineContentIsCheckedByItsDigest() async throws {
        let content = Data("first attachment".utf8)
        func doc(_ id: String, digest: String, type: String = "text/plain") -> Value {
            .dictionary([
                "_id": .string(id), "_rev": .string("1-7a7e4b29f3af401e69b6f86e4c26b727"),
                "_attachments": .dictionary([
                    "one.txt": .dictionary([
                        "content_type": .string(type), "digest": .string(digest), "data": .string(content.base64EncodedString()),
                    ])
                ]),
            ])
        }
        let couchDBName = "md5-q2rWVu3cEfS8tvcpgnUN8Q=="
        #expect(try Self.md5(content) != couchDBName)
        try await withDatabase("t_inline") { db, _ in
            let collection = try db.defaultCollection()
            try await withListener([collection]) { _, base in
                let docs: [Value] = [
                    doc("own", digest: try Self.md5(content)),
                    doc("couchdb", digest: couchDBName),
                    doc("wrong", digest: "md5-AAAAAAAAAAAAAAAAAAAAAA=="),
                    doc("binary", digest: couchDBName, type: "application/octet-stream"),
                ]
                let reply = try await httpRequest(
                    "POST", base + "/t_inline/_bulk_docs",
                    body: JSON.string(from: .dictionary(["docs": .array(docs), "new_edits": .bool(false)])))
                #expect(reply.status == 201)
                guard case .array(let failures)? = reply.json else { throw CouchetteError(.invalidParameter, reply.text) }
                #expect(failures.compactMap { $0["id"] } == [.string("wrong"), .string("binary")], "\(reply.text)")
                #expect(failures.allSatisfy { $0["error"] == .string("content_md5_mismatch") }, "\(reply.text)")
                for id in ["own", "couchdb"] { #expect(try await collection.document(id: id) != nil, "\(id)") }
                for id in ["wrong", "binary"] { #expect(try await collection.document(id: id) == nil, "\(id)") }
                #expect(Self.blobFiles(db).count == 2)
            }
        }
    }

    /// `couchette check` verifies content stored under CouchDB's gzip name by recomputing that
    /// name from the content: the intact file passes; the same file with one byte changed (same
    /// length) is reported, naming the attachment, its document and the digest.
    @Test func checkRecomputesCouchDBsGzipNames() async throws {
        let content = Data("first attachment".utf8)
        let couchDBName = "md5-q2rWVu3cEfS8tvcpgnUN8Q=="
        let doc: Value = .dictionary([
            "_id": .string("couchdb"), "_rev": .string("1-7a7e4b29f3af401e69b6f86e4c26b727"),
            "_attachments": .dictionary([
                "one.txt": .dictionary([
                    "content_type": .string("text/plain"), "digest": .string(couchDBName), "data": .string(content.base64EncodedString()),
                ])
            ]),
        ])
        let directory = try TemporaryDirectory()
        let db = try directory.open("t_check")
        let path = db.path
        let files: [String]
        do {
            let collection = try db.defaultCollection()
            try await withListener([collection]) { _, base in
                let reply = try await httpRequest(
                    "POST", base + "/t_check/_bulk_docs",
                    body: JSON.string(from: .dictionary(["docs": .array([doc]), "new_edits": .bool(false)])))
                #expect(reply.status == 201 && reply.json == .array([]), "\(reply.text)")
            }
            files = Self.blobFiles(db)
            try await db.close()
        } catch {
            try? await db.close()
            throw error
        }
        #expect(files.count == 1)
        let file = path + "blobs/" + (try #require(files.first))
        #expect(try Data(contentsOf: URL(fileURLWithPath: file)) == content, "stored decoded, under CouchDB's name")
        let intact = try await CLI.run(["check", path])
        #expect(intact.status == 0 && intact.stdout == "ok\n", "\(intact.stderr)")

        var damaged = content
        damaged[0] ^= 0x20  // "First attachment": same length
        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: file)
        try damaged.write(to: URL(fileURLWithPath: file))
        let check = try await CLI.run(["check", path])
        #expect(check.status == 1)
        #expect(
            check.stderr.contains("one.txt") && check.stderr.contains("'couchdb'") && check.stderr.contains(couchDBName)
                && check.stderr.contains("does not match"), "\(check.stderr)")
    }

    /// A pulling replicator checks what it receives: a server answering `_bulk_get` with inline
    /// content that does not match its digest makes that document fail with an error naming
    /// the attachment and both digests; nothing is stored.
    @Test func pulledContentThatDoesNotMatchIsTheDocumentsError() async throws {
        let content = Data("pulled content".utf8)
        let server = try TranscriptServer { request in
            let doc: Value = .dictionary([
                "_id": .string("d"), "_rev": .string("1-0123456789abcdef0123456789abcdef"),
                "_revisions": .dictionary(["start": .int(1), "ids": .array([.string("0123456789abcdef0123456789abcdef")])]),
                "_attachments": .dictionary([
                    "a.bin": .dictionary([
                        "content_type": .string("application/octet-stream"), "revpos": .int(1),
                        "digest": .string("md5-AAAAAAAAAAAAAAAAAAAAAA=="), "length": .int(Int64(content.count)),
                        "data": .string(content.base64EncodedString()),
                    ])
                ]),
            ])
            return TranscriptServer.json(
                .dictionary(["results": .array([.dictionary(["id": .string("d"), "docs": .array([.dictionary(["ok": doc])])])])]))
        }
        defer { Task { await server.stop() } }
        let peer = try RemotePeer(url: server.url("src"))
        let fetched = try await peer.bulkGet([
            RevisionRequest(id: "d", revisionID: "1-0123456789abcdef0123456789abcdef", knownAncestors: [])
        ])
        guard case .found(let revision)? = fetched.first else { throw CouchetteError(.notFound, "\(fetched)") }
        try await withDatabase("dst") { db, _ in
            let errors = try await LocalPeer(collection: try db.defaultCollection()).bulkDocs([revision])
            let error = try #require(errors.first?.error)
            #expect(error.code == .invalidParameter && BlobWriter.isDigestMismatch(error))
            #expect(
                error.message.contains("'d'") && error.message.contains("a.bin") && error.message.contains("md5-AAAAAAAAAAAAAAAAAAAAAA=="),
                "\(error)")
            #expect(try await db.defaultCollection().document(id: "d") == nil)
            #expect(Self.blobFiles(db).isEmpty)
        }
    }
}
