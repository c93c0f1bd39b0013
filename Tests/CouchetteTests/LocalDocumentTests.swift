import Foundation
import Testing

@testable import Couchette

/// `_local` documents over the listener, as CouchDB 3.x answers them (transcript `a03`): no
/// revision check (`0-(N+1)` for the `0-N` sent), `_` fields not stored, `DELETE` without a
/// revision; and the checkpoint writers (in-process and `RemotePeer`) working with that.
@Suite(.serialized, .tags(.concurrency, .sanitizeAddress)) struct LocalDocumentTests {
    /// Every `_local` request of `a03` (PUT, GET, DELETE, `_bulk_docs` with a `_local` id,
    /// `_local_docs`) answered as CouchDB answered it, in order. Deviations:
    /// a malformed revision is 400 here (CouchDB: 500), and the unescaped-slash read (`a/b`,
    /// exchange 33) is not replayed: the listener sees paths percent-decoded.
    @Test func listenerAnswersTheA03TranscriptAsCouchDB() async throws {
        let exchanges = try Transcript.load("a03-local-docs").filter {
            ($0.route.contains("/_local") || $0.route.hasSuffix("/_bulk_docs")) && $0.seq != 33
        }
        #expect(exchanges.count >= 25)
        try await withDatabase("t_local") { db, _ in
            try await withListener([try db.defaultCollection()]) { _, base in
                for exchange in exchanges {
                    let reply = try await httpRequest(
                        exchange.method, base + exchange.path,
                        body: exchange.requestBody.map { String(decoding: $0, as: UTF8.self) })
                    let expectedStatus = exchange.status == 500 ? 400 : exchange.status
                    #expect(reply.status == expectedStatus, "exchange \(exchange.seq): \(exchange.method) \(exchange.path) → \(reply.text)")
                    if exchange.status < 500 {
                        #expect(reply.json == exchange.responseJSON, "exchange \(exchange.seq): \(exchange.method) \(exchange.path)")
                    }
                }
            }
        }
    }

    @Test func checkpointsWrittenWithAStaleRevisionOrRevisionsFieldAreAccepted() async throws {
        try await withDatabase("db") { db, _ in
            try await withListener([try db.defaultCollection()]) { _, base in
                let url = base + "/db/_local/cp"
                #expect(try await httpRequest("PUT", url, body: #"{"n":1}"#).json?["rev"] == .string("0-1"))
                #expect(try await httpRequest("PUT", url, body: #"{"_rev":"0-1","n":2}"#).json?["rev"] == .string("0-2"))
                // CouchDB's replicator from its second run: `_revisions` says 0-1 while 0-2 is stored.
                let stale = try await httpRequest("PUT", url, body: #"{"_rev":"0-2","_revisions":{"start":0,"ids":["1"]},"n":3}"#)
                #expect(stale.status == 201 && stale.json?["rev"] == .string("0-2"))
                let read = try await httpRequest("GET", url)
                #expect(read.json == .dictionary(["_id": .string("_local/cp"), "_rev": .string("0-2"), "n": .int(3)]))
                let ifMatch = try await httpRequest("PUT", url, body: #"{"n":4}"#, headers: ["If-Match": "\"0-6\""])
                #expect(ifMatch.json?["rev"] == .string("0-7"))
                #expect(try await httpRequest("PUT", url + "?rev=1-abc", body: "{}").status == 400)
                #expect(try await httpRequest("DELETE", url + "?rev=0-1").json?["rev"] == .string("0-0"))
                #expect(try await httpRequest("DELETE", url).status == 404)
            }
        }
    }

    @Test func inProcessCheckpointWritesAdvanceTheRevisionServed() async throws {
        try await withDatabase("db") { db, _ in
            let collection = try db.defaultCollection()
            try await collection.putLocalDocument(id: "cp", .dictionary(["n": .int(1), "_revisions": .string("not kept")]))
            try await collection.putLocalDocument(id: "cp", .dictionary(["n": .int(2)]))
            #expect(try collection.localDocument(id: "cp") == Value.dictionary(["n": .int(2)]))
            try await withListener([collection]) { _, base in
                let read = try await httpRequest("GET", base + "/db/_local/cp")
                #expect(read.json == .dictionary(["_id": .string("_local/cp"), "_rev": .string("0-2"), "n": .int(2)]))
                try await collection.putLocalDocument(id: "cp", .dictionary(["n": .int(3)]))
                // An HTTP client holding 0-2 writes 0-3 over the engine's 0-3, as on CouchDB.
                #expect(try await httpRequest("PUT", base + "/db/_local/cp", body: #"{"_rev":"0-2","n":4}"#).json?["rev"] == .string("0-3"))
            }
            #expect(try collection.localDocumentWithRevision(id: "cp")?.revisionID == "0-3")
            try await collection.putLocalDocument(id: "cp", .dictionary(["n": .int(5)]))
            #expect(try collection.localDocumentWithRevision(id: "cp")?.revisionID == "0-4")
            try await collection.putLocalDocument(id: "cp", nil)
            let removed = try collection.localDocument(id: "cp")
            #expect(removed == nil)
        }
    }

    @Test func remotePeerKeepsItsCheckpointCurrentAgainstTheListener() async throws {
        try await withDatabase("db") { db, _ in
            try await withListener([try db.defaultCollection()]) { _, base in
                let peer = try RemotePeer(url: URL(string: base + "/db")!)
                #expect(try await peer.localDocument(id: "rep") == nil)
                try await peer.putLocalDocument(id: "rep", .dictionary(["last_seq": .int(1)]))
                try await peer.putLocalDocument(id: "rep", .dictionary(["last_seq": .int(2)]))
                #expect(try await httpRequest("GET", base + "/db/_local/rep").json?["_rev"] == .string("0-2"))
                // Someone else moved it on: the peer's write still lands.
                _ = try await httpRequest("PUT", base + "/db/_local/rep", body: #"{"_rev":"0-2","last_seq":99}"#)
                try await peer.putLocalDocument(id: "rep", .dictionary(["last_seq": .int(3)]))
                #expect(try await httpRequest("GET", base + "/db/_local/rep").json?["last_seq"] == .int(3))
                #expect(try await peer.localDocument(id: "rep") == .dictionary(["last_seq": .int(3)]))
                // A fresh peer (a restarted replicator) that never read it still updates it.
                let restarted = try RemotePeer(url: URL(string: base + "/db")!)
                try await restarted.putLocalDocument(id: "rep", .dictionary(["last_seq": .int(4)]))
                #expect(try await httpRequest("GET", base + "/db/_local/rep").json?["last_seq"] == .int(4))
            }
        }
    }

    @Test func readOnlyListenersStillManageCheckpoints() async throws {
        try await withDatabase("db") { db, _ in
            try await withListener([try db.defaultCollection()], configure: { $0.readOnly = true }) { _, base in
                let put = try await httpRequest("PUT", base + "/db/_local/cp", body: "{}")
                #expect(put.status == 201)
                let deleted = try await httpRequest("DELETE", base + "/db/_local/cp?rev=0-1")
                #expect(deleted.status == 200)
            }
        }
    }
}
