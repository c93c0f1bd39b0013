import Foundation
import Testing

@testable import Couchette

/// What the listener still refuses of attachments, one document at a time with a status CouchDB's
/// replicator skips, never one that ends the replication: the `multipart/related` PUT CouchDB's
/// replicator sends (415), and attachments in plain (`new_edits` true) writes (403). Replicated
/// JSON revisions with attachments are stored: see ``ListenerAttachmentTests``.
@Suite(.tags(.concurrency, .sanitizeAddress)) struct AttachmentRefusalTests {
    @Test func theMultipartPutCouchDBsReplicatorSendsIsRefusedWith415() async throws {
        let exchanges = try Transcript.load("b01-replicate-initial")
        let multipart = exchanges.filter { $0.method == "PUT" && ($0.requestHeaders["Content-Type"] ?? "").hasPrefix("multipart/related") }
        #expect(multipart.count == 2)
        try await withDatabase("dst") { db, _ in
            let collection = try db.defaultCollection()
            try await withListener([collection]) { _, base in
                for exchange in multipart {
                    let reply = try await replay(exchange, to: base)
                    #expect(reply.status == 415, "\(exchange.path): \(reply.text)")
                    #expect(reply.json?["error"] == .string("unsupported_media_type"))
                }
                #expect(try await collection.document(id: "att1") == nil)
                // The design document's plain JSON PUT of the same run is stored.
                let design = try #require(exchanges.first { $0.method == "PUT" && $0.route == "/dst/_design/app" })
                #expect(try await replay(design, to: base).status == 201)
                #expect(try await collection.document(id: "_design/app") != nil)
            }
        }
    }

    @Test func plainWritesWithAttachmentsAreForbiddenPerDocument() async throws {
        try await withDatabase("db") { db, _ in
            let collection = try db.defaultCollection()
            try await withListener([collection]) { _, base in
                let inline = #"{"_attachments":{"a.txt":{"content_type":"text/plain","data":"aGVsbG8="}},"x":1}"#
                let put = try await httpRequest("PUT", base + "/db/withatt", body: inline)
                #expect(put.status == 403 && put.json?["error"] == .string("forbidden"), "\(put.text)")

                let edits = #"{"docs":[{"_id":"c","_attachments":{"n.txt":{"data":"aGk="}}},{"_id":"d","y":2}]}"#
                let saved = try await httpRequest("POST", base + "/db/_bulk_docs", body: edits)
                guard case .array(let rows)? = saved.json, rows.count == 2 else { Issue.record("\(saved.text)"); return }
                #expect(rows[0]["error"] == .string("forbidden") && rows[1]["ok"] == .bool(true))
                for (id, stored) in [("withatt", false), ("c", false), ("d", true)] {
                    let document = try await collection.document(id: id)
                    #expect((document != nil) == stored, "\(id)")
                }
            }
        }
    }
}
