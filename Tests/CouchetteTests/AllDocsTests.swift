import Foundation
import Testing

@testable import Couchette

/// `GET|POST /{db}/_all_docs` on the listener: `keys` (rows in their order, `not_found` and
/// deleted rows as CouchDB writes them), `include_docs`, ranges, paging, direction.
@Suite(.serialized, .tags(.concurrency, .sanitizeAddress)) struct AllDocsTests {
    private static func encoded(_ json: String) -> String {
        json.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!
    }

    /// Documents a, b, c, e live and d deleted.
    private func withFixture(_ body: (Collection, String) async throws -> Void) async throws {
        try await withDatabase("db") { db, _ in
            let collection = try db.defaultCollection()
            for id in ["e", "c", "a", "d", "b"] { try await collection.save(document: MutableDocument(id: id).setString(id, forKey: "v")) }
            try await collection.delete(document: try #require(await collection.document(id: "d")))
            try await withListener([collection]) { _, base in try await body(collection, base) }
        }
    }

    @Test func keysAnswerInTheirOrderWithMissingAndDeletedRows() async throws {
        try await withFixture { collection, base in
            let deletedRev = try #require(collection.storedState(id: "d").revisionID)
            let cRev = try #require(await collection.document(id: "c")?.revisionID)
            let posted = try await httpRequest("POST", base + "/db/_all_docs?include_docs=true", body: #"{"keys":["c","zz","d","a","c"]}"#)
            #expect(posted.status == 200 && posted.json?["total_rows"] == .int(4))
            guard case .array(let rows)? = posted.json?["rows"] else { Issue.record("rows: \(posted.text)"); return }
            #expect(rows.count == 5)
            #expect(
                rows[0]
                    == .dictionary([
                        "id": .string("c"), "key": .string("c"), "value": .dictionary(["rev": .string(cRev)]),
                        "doc": .dictionary(["_id": .string("c"), "_rev": .string(cRev), "v": .string("c")]),
                    ]))
            #expect(rows[1] == .dictionary(["key": .string("zz"), "error": .string("not_found")]))
            #expect(
                rows[2]
                    == .dictionary([
                        "id": .string("d"), "key": .string("d"), "doc": .null,
                        "value": .dictionary(["rev": .string(deletedRev), "deleted": .bool(true)]),
                    ]))
            #expect(rows[3]["id"] == .string("a") && rows[4]["id"] == .string("c"))

            let viaGet = try await httpRequest("GET", base + "/db/_all_docs?keys=" + Self.encoded(#"["zz","b"]"#))
            #expect(
                viaGet.json?["rows"]
                    == .array([
                        .dictionary(["key": .string("zz"), "error": .string("not_found")]),
                        try #require(viaGet.json?["rows"]?[1]),
                    ]))
            #expect(viaGet.json?["rows"]?[1]?["id"] == .string("b") && viaGet.json?["rows"]?[1]?["doc"] == nil)

            // Options in the POST body, paging over the keys.
            let paged = try await httpRequest(
                "POST", base + "/db/_all_docs", body: #"{"keys":["a","b","c","e"],"skip":1,"limit":2,"include_docs":true}"#)
            #expect(paged.json?["rows"]?[0]?["doc"]?["v"] == .string("b"))
            #expect(paged.json?["rows"]?[1]?["id"] == .string("c") && paged.json?["rows"]?[2] == nil)
        }
    }

    @Test func rangesDirectionAndPaging() async throws {
        try await withFixture { _, base in
            func ids(_ query: String) async throws -> [String] {
                let reply = try await httpRequest("GET", base + "/db/_all_docs" + query)
                guard case .array(let rows)? = reply.json?["rows"] else { Issue.record("\(query): \(reply.text)"); return [] }
                return rows.compactMap { if case .string(let id)? = $0["id"] { id } else { nil } }
            }
            #expect(try await ids("") == ["a", "b", "c", "e"])
            #expect(try await ids("?descending=true") == ["e", "c", "b", "a"])
            #expect(try await ids("?startkey=%22b%22&endkey=%22d%22") == ["b", "c"])
            #expect(try await ids("?start_key=%22b%22&end_key=%22e%22&inclusive_end=false") == ["b", "c"])
            #expect(try await ids("?descending=true&startkey=%22d%22&endkey=%22b%22") == ["c", "b"])
            #expect(try await ids("?descending=true&startkey=%22e%22&endkey=%22b%22&inclusive_end=false") == ["e", "c"])
            #expect(try await ids("?skip=1&limit=2") == ["b", "c"])
            #expect(try await ids("?key=%22c%22") == ["c"])
            let withSeq = try await httpRequest("GET", base + "/db/_all_docs?update_seq=true&limit=0")
            #expect(withSeq.json?["update_seq"] == .int(6) && withSeq.json?["rows"] == .array([]))
        }
    }

    @Test func badOptionsAreRefused() async throws {
        try await withFixture { _, base in
            let mixed = try await httpRequest("POST", base + "/db/_all_docs", body: #"{"keys":["a"],"startkey":"a"}"#)
            #expect(mixed.status == 400 && mixed.json?["error"] == .string("bad_request"))
            #expect(try await httpRequest("POST", base + "/db/_all_docs", body: #"{"keys":"a"}"#).status == 400)
            #expect(try await httpRequest("POST", base + "/db/_all_docs", body: "[1]").status == 400)
            #expect(try await httpRequest("GET", base + "/db/_all_docs?keys=%5Bnope").status == 400)
            #expect(try await httpRequest("GET", base + "/db/_all_docs?descending=maybe").status == 400)
            #expect(try await httpRequest("PUT", base + "/db/_all_docs", body: "{}").status == 405)
        }
    }
}
