import Foundation
import Testing

@testable import Couchette

/// The listener's `multipart/related` side, over real loopback HTTP: the `PUT ?new_edits=false`
/// CouchDB's replicator sends for documents with attachments (transcripts `b01`, `a13`), and
/// `open_revs` answered as `multipart/mixed` with nested `multipart/related` parts.
@Suite(.tags(.concurrency, .sanitizeAddress)) struct MultipartListenerTests {
    @Test func theMultipartPutsOfCouchDBsReplicatorAreStoredWithTheirAttachments() async throws {
        let exchanges = try Transcript.load("b01-replicate-initial")
        let multipart = exchanges.filter { $0.method == "PUT" && ($0.requestHeaders["Content-Type"] ?? "").hasPrefix("multipart/related") }
        #expect(multipart.count == 2)
        try await withDatabase("dst") { db, _ in
            let collection = try db.defaultCollection()
            try await withListener([collection]) { _, base in
                for exchange in multipart {
                    let reply = try await replay(exchange, to: base)
                    #expect(reply.status == 201 && reply.json == exchange.responseJSON, "\(exchange.path): \(reply.text)")
                }
                // note.txt came gzip-encoded (47 bytes) and is stored decoded (72).
                let note = try #require(
                    try await collection.document(id: "att1")?.dictionary(forKey: "_attachments")?.blob(forKey: "note.txt"))
                #expect(try await note.content() == Data(String(repeating: "a small text attachment\n", count: 3).utf8))
                let pixel = try #require(
                    try await collection.document(id: "att2")?.dictionary(forKey: "_attachments")?.blob(forKey: "pixel.png"))
                #expect(pixel.length == 70 && pixel.contentType == "image/png")
                // GET serves the stored content back; HEAD says how long it is.
                let get = try await httpRequest("GET", base + "/dst/att1/note.txt")
                #expect(get.status == 200 && get.text == String(repeating: "a small text attachment\n", count: 3))
                // As CouchDB (a13 #3): the length goes ahead, the body is not chunked.
                #expect(get.headers["content-length"] == "72" && get.headers["transfer-encoding"] == nil, "\(get.headers)")
                let head = try await httpRequest("HEAD", base + "/dst/att2/pixel.png")
                #expect(head.status == 200 && head.headers["content-length"] == "70", "\(head.headers)")
            }
        }
    }

    /// `a13`: CouchDB's answers to bodies whose attachment part is missing or longer than its
    /// entry says (400, nothing stored), and to a well-formed one (201).
    @Test func malformedMultipartBodiesAreRefusedAsCouchDBRefusesThem() async throws {
        let exchanges = try Transcript.load("a13-put-multipart-and-attachments")
        try await withDatabase("t_mp") { db, _ in
            let collection = try db.defaultCollection()
            try await withListener([collection]) { _, base in
                for seq in [1, 12, 13] {
                    let exchange = try #require(exchanges.first { $0.seq == seq })
                    let reply = try await replay(exchange, to: base)
                    #expect(reply.status == exchange.status, "#\(seq): \(reply.text)")
                    #expect(reply.json?["error"] == exchange.responseJSON?["error"], "#\(seq): \(reply.text)")
                    if exchange.status == 400 {
                        #expect(
                            reply.json?["reason"].map { JSON.string(from: $0) }?.contains(
                                exchange.responseJSON?["reason"].map { if case .string(let text) = $0 { text } else { "" } } ?? "?")
                                == true,
                            "#\(seq): \(reply.text)")
                    }
                }
                #expect(try await collection.document(id: "doc1") != nil)
                #expect(try await collection.document(id: "doc2") == nil)
                #expect(try await collection.document(id: "doc3") == nil)
            }
        }
    }

    /// An attachment GET sends `Content-Length`, then streams the content: 3 MB (a dozen blob
    /// chunks) arrive whole, and the connection carries the next request.
    @Test func attachmentGetsCarryContentLength() async throws {
        try await withDatabase("src") { db, _ in
            let collection = try db.defaultCollection()
            let content = Data((0..<3_000_000).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ $0 >> 11) })
            try await collection.save(
                document: MutableDocument(id: "doc").setBlob(Blob(contentType: "application/x-test", data: content), forKey: "file"))
            try await withListener([collection]) { _, base in
                for _ in 0..<2 {
                    let get = try await HTTPClient.shared.data(for: HTTPClientRequest(method: "GET", url: base + "/src/doc/blob_/file"))
                    #expect(get.status == 200 && get.headers["content-length"] == "3000000" && get.headers["transfer-encoding"] == nil)
                    #expect(get.body == content)
                }
                let head = try await httpRequest("HEAD", base + "/src/doc/blob_/file")
                #expect(head.status == 200 && head.headers["content-length"] == "3000000" && head.text.isEmpty)
            }
        }
    }

    /// A revision with a 600 KB attachment, served by one listener as `open_revs` multipart and
    /// read part by part into a second database: the content arrives intact.
    @Test func openRevisionsWithAttachmentsAreServedAsNestedMultipart() async throws {
        try await withDatabase("src") { db, _ in
            let collection = try db.defaultCollection()
            let content = Data((0..<600_000).map { UInt8(truncatingIfNeeded: $0 &* 31) })
            let document = MutableDocument(id: "big").setString("v", forKey: "k").setBlob(
                Blob(contentType: "application/x-test", data: content), forKey: "file")
            try await collection.save(document: document)
            let rev = try #require(document.revisionID)
            try await withListener([collection]) { _, base in
                let query = "revs=true&attachments=true&open_revs=" + RemotePeer.encodeQueryValue("[\"\(rev)\"]")
                let stream = try await HTTPClient.shared.stream(
                    for: HTTPClientRequest(method: "GET", url: base + "/src/big?" + query, headers: [("Accept", "multipart/mixed")]))
                #expect(stream.status == 200)
                let outerType = try #require(stream.headers["content-type"])
                var outer = try MultipartReader(contentType: outerType)
                var inner: MultipartReader?
                let target = try TemporaryDirectory()
                let store = BlobStore(databasePath: target.path, fullSync: false)
                let reader = MultipartDocumentReader(store: store)
                for try await chunk in stream {
                    for event in try outer.feed(chunk) {
                        switch event {
                        case .part(let headers):
                            let type = try #require(headers["content-type"])
                            inner = try MultipartReader(contentType: type)
                        case .data(let bytes):
                            for innerEvent in try inner?.feed(bytes) ?? [] { try reader.handle(innerEvent) }
                        case .partEnd:
                            try inner?.finish()
                        case .end: break
                        }
                    }
                }
                try outer.finish()
                let revision = try reader.revision()
                #expect(revision.revisionID == rev && revision.body["k"] == .string("v"))
                let blob = try #require(document.blob(forKey: "file"))
                let digest = try #require(blob.digest)
                let path = try #require(store.path(for: digest))
                #expect(FileManager.default.contents(atPath: path) == content)
            }
        }
    }
}
