import Foundation
import Testing

@testable import Couchette

/// What the listener still refuses of attachments, one document at a time with a status CouchDB's
/// replicator skips, never one that ends the replication: attachments in plain (`new_edits`
/// true) writes (403). Replicated revisions with attachments are stored, as JSON (see
/// ``ListenerAttachmentTests``) and as `multipart/related` (see ``MultipartListenerTests``).
@Suite(.tags(.concurrency, .sanitizeAddress)) struct AttachmentRefusalTests {
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
