import Foundation
import Testing

@testable import Couchette

/// `_design/` documents are kept and replicated but are not data: SQL++ `FROM` leaves them out
/// (as CouchDB's Mango does), `document(id:)` still reads them.
@Suite(.tags(.concurrency, .sanitizeAddress)) struct DesignDocumentTests {
    @Test func queriesSkipDesignDocumentsWhichStillReadById() async throws {
        try await withDatabase { db, _ in
            let collection = try db.defaultCollection()
            try await collection.save(
                document: MutableDocument(id: "_design/app", data: ["views": ["v": ["map": "function(doc){}"]], "type": "item"]))
            try await collection.save(document: MutableDocument(id: "one", data: ["type": "item"]))
            try await collection.save(document: MutableDocument(id: "two", data: ["type": "item"]))
            #expect(try await queryJSON(db, "SELECT META().id AS id FROM _ ORDER BY META().id") == [#"{"id":"one"}"#, #"{"id":"two"}"#])
            #expect(try await queryJSON(db, "SELECT COUNT(*) AS n FROM _ WHERE type = 'item'") == [#"{"n":2}"#])
            try await collection.createIndex(withName: "byType", config: ValueIndexConfiguration(["type"]))
            #expect(
                try await queryJSON(db, "SELECT META().id AS id FROM _ WHERE type = 'item' ORDER BY type, META().id")
                    == [#"{"id":"one"}"#, #"{"id":"two"}"#])
            #expect(try await queryJSON(db, "SELECT META().id AS id FROM _ WHERE META().id = '_design/app'") == [])
            #expect(try await collection.document(id: "_design/app")?.string(forKey: "type") == "item")
        }
    }

    /// `GET /{db}` after 10 inserts and 3 deletions, the scenario of transcript `a02`.
    @Test func databaseInfoCountsDeletionsAndSizes() async throws {
        try await withDatabase("t_dbinfo") { db, _ in
            let collection = try db.defaultCollection()
            try await withListener([collection]) { _, base in
                let empty = try await httpRequest("GET", base + "/t_dbinfo")
                #expect(empty.json?["doc_count"] == .int(0) && empty.json?["doc_del_count"] == .int(0))
                #expect(empty.json?["sizes"]?["active"] == .int(0))
                let exchanges = try Transcript.load("a02-database-info")
                let insert = try #require(exchanges.first { $0.method == "POST" })
                #expect(try await replay(insert, to: base).status == 201)
                for id in ["doc00", "doc01", "doc02"] {
                    let rev = try #require(try await collection.document(id: id)?.revisionID)
                    #expect(try await httpRequest("DELETE", base + "/t_dbinfo/\(id)?rev=\(rev)").status == 200)
                }
                _ = try await httpRequest("PUT", base + "/t_dbinfo/_local/somelocal", body: #"{"a":1}"#)
                let info = try await httpRequest("GET", base + "/t_dbinfo")
                let expected = try #require(exchanges.first { $0.seq == 9 }?.responseJSON)
                #expect(info.json?["doc_count"] == expected["doc_count"] && info.json?["doc_del_count"] == expected["doc_del_count"])
                guard case .int(let active)? = info.json?["sizes"]?["active"], case .int(let file)? = info.json?["sizes"]?["file"] else {
                    Issue.record("sizes missing: \(info.text)")
                    return
                }
                // Seven ~120-byte bodies plus record headers; the file holds at least that.
                #expect(active > 7 * 100 && active < 7 * 400 && file >= active)
            }
        }
    }
}
