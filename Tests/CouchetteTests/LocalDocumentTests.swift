import Foundation
import Testing
@testable import Couchette

/// `_local` documents over the listener: revisions `0-1`, `0-2`, … and the standard-document
/// `_rev` rules CouchDB's API reference gives them ("identical to storing a standard document"),
/// `DELETE`, and the checkpoint writers (in-process and `RemotePeer`) keeping up with them.
@Suite(.serialized, .tags(.concurrency, .sanitizeAddress)) struct LocalDocumentTests {
    @Test func revisionsAdvanceAndStaleRevisionsConflict() async throws {
        try await withDatabase("db") { db, _ in
            try await withListener([try db.defaultCollection()]) { _, base in
                let url = base + "/db/_local/cp"
                let created = try await httpRequest("PUT", url, body: #"{"n":1}"#)
                #expect(created.status == 201 && created.json?["rev"] == .string("0-1") && created.json?["id"] == .string("_local/cp"))
                let second = try await httpRequest("PUT", url, body: #"{"_rev":"0-1","n":2}"#)
                #expect(second.status == 201 && second.json?["rev"] == .string("0-2"))
                let third = try await httpRequest("PUT", url + "?rev=0-2", body: #"{"n":3}"#)
                #expect(third.json?["rev"] == .string("0-3"))
                let read = try await httpRequest("GET", url)
                #expect(read.json == .dictionary(["_id": .string("_local/cp"), "_rev": .string("0-3"), "n": .int(3)]))

                let noRev = try await httpRequest("PUT", url, body: #"{"n":9}"#)
                #expect(noRev.status == 409 && noRev.json?["error"] == .string("conflict"))
                let stale = try await httpRequest("PUT", url, body: #"{"_rev":"0-2","n":9}"#)
                #expect(stale.status == 409)
                let badFormat = try await httpRequest("PUT", url, body: #"{"_rev":"3-abc","n":9}"#)
                #expect(badFormat.status == 400 && badFormat.json?["error"] == .string("bad_request"))
                let revOnMissing = try await httpRequest("PUT", base + "/db/_local/other", body: #"{"_rev":"0-4"}"#)
                #expect(revOnMissing.status == 409)
                #expect(try await httpRequest("GET", url).json?["n"] == .int(3))

                #expect(try await httpRequest("DELETE", url).status == 409)
                #expect(try await httpRequest("DELETE", url + "?rev=0-1").status == 409)
                let deleted = try await httpRequest("DELETE", url, headers: ["If-Match": "\"0-3\""])
                #expect(deleted.status == 200 && deleted.json?["ok"] == .bool(true) && deleted.json?["rev"] == .string("0-0"))
                let gone = try await httpRequest("GET", url)
                #expect(gone.status == 404 && gone.json?["reason"] == .string("missing"))
                #expect(try await httpRequest("DELETE", url + "?rev=0-3").status == 404)
                // Recreated after a delete: it starts over at 0-1.
                #expect(try await httpRequest("PUT", url, body: "{}").json?["rev"] == .string("0-1"))
            }
        }
    }

    @Test func inProcessCheckpointWritesAdvanceTheRevisionServed() async throws {
        try await withDatabase("db") { db, _ in
            let collection = try db.defaultCollection()
            try await collection.putLocalDocument(id: "cp", .dictionary(["n": .int(1)]))
            try await collection.putLocalDocument(id: "cp", .dictionary(["n": .int(2)]))
            #expect(try collection.localDocument(id: "cp") == Value.dictionary(["n": .int(2)]))
            try await withListener([collection]) { _, base in
                let read = try await httpRequest("GET", base + "/db/_local/cp")
                #expect(read.json?["_rev"] == .string("0-2") && read.json?["n"] == .int(2))
                // An HTTP client holding 0-2 goes stale once the engine writes again.
                try await collection.putLocalDocument(id: "cp", .dictionary(["n": .int(3)]))
                #expect(try await httpRequest("PUT", base + "/db/_local/cp", body: #"{"_rev":"0-2"}"#).status == 409)
                #expect(try await httpRequest("PUT", base + "/db/_local/cp", body: #"{"_rev":"0-3","n":4}"#).status == 201)
            }
            let revision = try collection.localDocumentWithRevision(id: "cp")?.revisionID
            #expect(revision == "0-4")
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
                // Someone else moved it on: the peer's remembered 0-2 is stale, it re-reads and retries.
                _ = try await httpRequest("PUT", base + "/db/_local/rep", body: #"{"_rev":"0-2","last_seq":99}"#)
                try await peer.putLocalDocument(id: "rep", .dictionary(["last_seq": .int(3)]))
                let read = try await httpRequest("GET", base + "/db/_local/rep")
                #expect(read.json?["_rev"] == .string("0-4") && read.json?["last_seq"] == .int(3))
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
