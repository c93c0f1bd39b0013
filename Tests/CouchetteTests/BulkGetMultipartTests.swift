import Foundation
import Testing

@testable import Couchette

/// The listener's `POST /{db}/_bulk_get` answered as `multipart/mixed` when `Accept` asks for it
/// (CouchDB 3.x, transcript `a10` #11), read back over real loopback HTTP with the project's
/// multipart readers.
@Suite(.tags(.concurrency, .sanitizeAddress)) struct BulkGetMultipartTests {
    /// One part of a `multipart/mixed` `_bulk_get` answer, as a reader sees it.
    struct Part: Equatable, CustomStringConvertible {
        enum Kind: Equatable { case json, error, related }
        var kind: Kind
        /// `X-Doc-Id` and `X-Rev-Id` (CouchDB names the revision of a nested part).
        var label: [String: String]
        /// The JSON part (the document, without the fields that say how content was encoded
        /// on the wire: CouchDB sends compressible attachments gzip-encoded, Couchette as stored)
        /// or the error object.
        var json: Value
        /// The attachment contents that followed, decoded, by digest.
        var contents: [String: Data]

        var description: String { "\(kind) \(label) \(JSON.string(from: json)) \(contents.mapValues(\.count))" }
    }

    /// Reads a whole `multipart/mixed` body part by part; nested `multipart/related` parts go
    /// through ``MultipartDocumentReader`` (content staged in `staging`, gzip decoded).
    static func parts(of chunks: [Data], contentType: String, staging: String) throws -> [Part] {
        var outer = try MultipartReader(contentType: contentType)
        var parts: [Part] = []
        var headers: [String: String] = [:]
        var json: [UInt8] = []
        var inner: (parts: MultipartReader, document: MultipartDocumentReader)?
        for chunk in chunks {
            for event in try outer.feed(chunk) {
                switch event {
                case .part(let partHeaders):
                    headers = partHeaders
                    json = []
                    let type = partHeaders["content-type"] ?? ""
                    inner =
                        type.hasPrefix("multipart/related")
                        ? (try MultipartReader(contentType: type), MultipartDocumentReader(.staging(directory: staging))) : nil
                case .data(let bytes):
                    if var related = inner {
                        for innerEvent in try related.parts.feed(bytes) { try related.document.handle(innerEvent) }
                        inner = related
                    } else {
                        json += bytes
                    }
                case .partEnd:
                    let label = headers.filter { $0.key.hasPrefix("x-") }
                    if let related = inner {
                        try related.parts.finish()
                        let document = try #require(related.document.documentJSON)
                        let revision = try related.document.revision()
                        var contents: [String: Data] = [:]
                        for (digest, content) in revision.attachments { contents[digest] = try content.data() }
                        parts.append(
                            Part(
                                kind: .related, label: label, json: withoutGzipTransferFields(document),
                                contents: contents))
                    } else {
                        let kind: Part.Kind = (headers["content-type"] ?? "").contains("error") ? .error : .json
                        parts.append(
                            Part(kind: kind, label: label, json: try JSON.parse(String(decoding: json, as: UTF8.self)), contents: [:]))
                    }
                case .end: break
                }
            }
        }
        try outer.finish()
        return parts
    }

    /// Sends `request` and collects the answer's chunks.
    static func collect(_ request: HTTPClientRequest) async throws -> (status: Int, contentType: String, chunks: [Data]) {
        let stream = try await HTTPClient.shared.stream(for: request)
        var chunks: [Data] = []
        for try await chunk in stream { chunks.append(chunk) }
        return (stream.status, stream.headers["content-type"] ?? "", chunks)
    }

    /// The documents of `a10` stored through the listener as CouchDB holds them (their
    /// revisions and attachments, from the recorded `attachments=true` answers), then `a10` #11
    /// asked again: every part agrees with CouchDB's recorded answer — the document with
    /// attachments as a nested `multipart/related` naming its id and revision, the plain one as
    /// JSON, the missing one as CouchDB's error object — and the attachment contents arrive
    /// intact.
    @Test func bulkGetAnswersMultipartAsCouchDBDoes() async throws {
        let exchanges = try Transcript.load("a10-bulk-get")
        let asked = try #require(exchanges.first { $0.seq == 11 })
        #expect(asked.requestHeaders["Accept"] == "multipart/mixed")
        // The revisions with their histories and inline content: `att` from #10, `a` from #1.
        let seeds: [Value] = try [(10, 0), (1, 0)].map { seq, index in
            let exchange = try #require(exchanges.first { $0.seq == seq })
            let results = try #require(exchange.responseJSON?["results"])
            guard case .array(let list) = results, case .array(let docs)? = list[index]["docs"] else { throw Failure("no docs in #\(seq)") }
            return try #require(docs.first?["ok"])
        }
        let staging = try TemporaryDirectory()
        try await withDatabase("t_bulkget") { db, _ in
            let collection = try db.defaultCollection()
            try await withListener([collection]) { _, base in
                let seeded = try await httpRequest(
                    "POST", base + "/t_bulkget/_bulk_docs",
                    body: JSON.string(from: .dictionary(["docs": .array(seeds), "new_edits": .bool(false)])))
                #expect(seeded.status == 201 && seeded.json == .array([]), "\(seeded.text)")

                var request = HTTPClientRequest(
                    method: "POST", url: base + asked.path, headers: [("Accept", "multipart/mixed"), ("Content-Type", "application/json")])
                request.body = Data(try #require(asked.requestBody))
                let answer = try await Self.collect(request)
                #expect(answer.status == 200 && answer.contentType.hasPrefix("multipart/mixed"), "\(answer.contentType)")
                let ours = try Self.parts(of: answer.chunks, contentType: answer.contentType, staging: staging.path)
                let couchDB = try Self.parts(
                    of: [Data(try #require(asked.responseBody))], contentType: try #require(asked.responseHeaders["Content-Type"]),
                    staging: staging.path)
                #expect(couchDB.map(\.kind) == [.related, .json, .error])
                #expect(ours == couchDB, "ours: \(ours)\nCouchDB: \(couchDB)")
                #expect(ours.first?.contents.values.map(\.count).sorted() == [16, 16])

                // Without Accept: multipart/mixed the answer stays JSON.
                let plain = try await httpRequest("POST", base + asked.path, body: String(decoding: asked.requestBody ?? [], as: UTF8.self))
                #expect(plain.status == 200 && plain.headers["content-type"] == "application/json", "\(plain.headers)")
                #expect(plain.json?["results"] != nil)
            }
        }
    }

    /// A revision with 600 KB of blob content and one without, asked together: the content
    /// streams as a `follows` part (the JSON part announces it), and what a second database
    /// stores from the parts is byte for byte what was saved.
    @Test func largeContentStreamsAsFollowingParts() async throws {
        try await withDatabase("src") { db, _ in
            let collection = try db.defaultCollection()
            let content = Data((0..<600_000).map { UInt8(truncatingIfNeeded: $0 &* 131 &+ $0 >> 9) })
            let big = MutableDocument(id: "big").setString("v", forKey: "k").setBlob(
                Blob(contentType: "application/x-test", data: content), forKey: "file")
            try await collection.save(document: big)
            try await collection.save(document: MutableDocument(id: "small").setInt(1, forKey: "n"))
            let digest = try #require(big.blob(forKey: "file")?.digest)
            try await withListener([collection]) { _, base in
                var request = HTTPClientRequest(
                    method: "POST", url: base + "/src/_bulk_get?revs=true&attachments=true",
                    headers: [("Accept", "multipart/mixed"), ("Content-Type", "application/json")])
                request.body = Data(#"{"docs":[{"id":"big"},{"id":"small"},{"id":"big","rev":"9-feed"}]}"#.utf8)
                let answer = try await Self.collect(request)
                #expect(answer.status == 200)
                let staging = try TemporaryDirectory()
                let parts = try Self.parts(of: answer.chunks, contentType: answer.contentType, staging: staging.path)
                #expect(parts.map(\.kind) == [.related, .json, .error])
                #expect(parts[0].label == ["x-doc-id": "big", "x-rev-id": try #require(big.revisionID)])
                #expect(parts[0].json["_attachments"]?["blob_/file"]?["follows"] == .bool(true))
                #expect(parts[0].contents == [digest: content])
                #expect(parts[1].json["_id"] == .string("small") && parts[1].json["n"] == .int(1))
                #expect(
                    parts[2].json
                        == .dictionary([
                            "id": .string("big"), "rev": .string("9-feed"), "error": .string("not_found"), "reason": .string("missing"),
                        ]))
            }
        }
    }
}

/// A failure raised by a test's own code.
private struct Failure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
