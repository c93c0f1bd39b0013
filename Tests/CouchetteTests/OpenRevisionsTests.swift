import Foundation
import Testing

@testable import Couchette

/// `GET /{db}/{docid}?open_revs=…` on the listener: `multipart/mixed` as the replication
/// protocol describes it (one `application/json` part per revision, `{"missing": rev}` parts
/// typed `error="true"`), JSON for clients that ask for `application/json`.
@Suite(.serialized, .tags(.concurrency, .sanitizeAddress)) struct OpenRevisionsTests {
    /// One part of a multipart body: its headers (lowercased names) and its content.
    struct Part { let headers: [String: String]; let body: String }

    /// Splits a `multipart/mixed` body on the boundary from its `Content-Type`, per RFC 2046:
    /// delimiters are CRLF + `--boundary`, the last one followed by `--`.
    static func parseMultipart(contentType: String, body: String) throws -> [Part] {
        let match = try #require(contentType.firstMatch(of: /^multipart\/mixed; boundary="([^"]+)"$/), "content type: \(contentType)")
        let boundary = String(match.1)
        let text = "\r\n" + body
        var sections = text.components(separatedBy: "\r\n--" + boundary)
        #expect(sections.removeFirst().isEmpty, "nothing before the first boundary")
        let last = sections.popLast()
        let closing = try #require(last, "a closing delimiter")
        #expect(closing.hasPrefix("--"), "the last delimiter ends with --")
        return try sections.map { section in
            #expect(section.hasPrefix("\r\n"))
            let pieces = section.dropFirst("\r\n".count).components(separatedBy: "\r\n\r\n")  // "\r\n" is one Character
            #expect(pieces.count >= 2, "a part has headers, a blank line and a body")
            var headers: [String: String] = [:]
            for line in try #require(pieces.first).split(separator: "\r\n") {
                let pair = line.split(separator: ":", maxSplits: 1)
                headers[pair[0].lowercased()] = pair.count > 1 ? pair[1].trimmingCharacters(in: .whitespaces) : ""
            }
            return Part(headers: headers, body: pieces.dropFirst().joined(separator: "\r\n\r\n"))
        }
    }

    private static func openRevs(_ list: String) -> String {
        "open_revs=" + list.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!
    }

    @Test func multipartByDefaultAndForMultipartClients() async throws {
        try await withDatabase("db") { db, _ in
            let collection = try db.defaultCollection()
            try await withListener([collection]) { _, base in
                let docs = #"""
                    {"new_edits":false,"docs":[
                      {"_id":"x","_rev":"2-bbb","_revisions":{"start":2,"ids":["bbb","aaa"]},"v":2},
                      {"_id":"x","_rev":"2-ccc","_revisions":{"start":2,"ids":["ccc","aaa"]},"_deleted":true}
                    ]}
                    """#
                #expect(try await httpRequest("POST", base + "/db/_bulk_docs", body: docs).status == 201)
                let url = base + "/db/x?revs=true&" + Self.openRevs(#"["2-bbb","9-zzz","2-ccc"]"#)
                for accept in [nil, "multipart/mixed", "*/*", "multipart/mixed, application/json"] {
                    let reply = try await httpRequest("GET", url, headers: accept.map { ["Accept": $0] } ?? [:])
                    #expect(reply.status == 200)
                    let parts = try Self.parseMultipart(contentType: try #require(reply.headers["content-type"]), body: reply.text)
                    #expect(parts.count == 3, "Accept \(accept ?? "(none)"): \(reply.text)")
                    guard parts.count == 3 else { continue }
                    #expect(parts[0].headers["content-type"] == "application/json")
                    let live = try JSON.parse(parts[0].body)
                    #expect(live["_id"] == .string("x") && live["_rev"] == .string("2-bbb") && live["v"] == .int(2))
                    #expect(live["_revisions"] == .dictionary(["start": .int(2), "ids": .array([.string("bbb"), .string("aaa")])]))
                    #expect(parts[1].headers["content-type"] == #"application/json; error="true""#)
                    #expect(try JSON.parse(parts[1].body) == .dictionary(["missing": .string("9-zzz")]))
                    let tombstone = try JSON.parse(parts[2].body)
                    #expect(tombstone["_rev"] == .string("2-ccc") && tombstone["_deleted"] == .bool(true))
                }

                let all = try await httpRequest("GET", base + "/db/x?open_revs=all")
                let leaves = try Self.parseMultipart(contentType: try #require(all.headers["content-type"]), body: all.text)
                let revs = try leaves.map { part -> String in
                    guard case .string(let rev)? = try JSON.parse(part.body)["_rev"] else { return "" }
                    return rev
                }
                #expect(Set(revs) == ["2-bbb", "2-ccc"])
            }
        }
    }

    @Test func jsonForClientsAskingForJSON() async throws {
        try await withDatabase("db") { db, _ in
            let collection = try db.defaultCollection()
            try await collection.save(document: MutableDocument(id: "d").setInt(1, forKey: "v"))
            let rev = try #require(await collection.document(id: "d")?.revisionID)
            try await withListener([collection]) { _, base in
                let url = base + "/db/d?" + Self.openRevs(#"["\#(rev)","3-nope"]"#)
                let reply = try await httpRequest("GET", url, headers: ["Accept": "application/json"])
                #expect(reply.headers["content-type"] == "application/json")
                #expect(reply.json?[0]?["ok"]?["v"] == .int(1))
                #expect(reply.json?[1] == .dictionary(["missing": .string("3-nope")]))
                let missing = try await httpRequest("GET", base + "/db/none?open_revs=all")
                #expect(missing.status == 404 && missing.json?["error"] == .string("not_found"))
            }
        }
    }
}
