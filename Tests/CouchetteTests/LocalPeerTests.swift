import Foundation
import Testing

@testable import Couchette

/// The replication primitives behind ``LocalPeer``: grafting with `new_edits=false`, winners,
/// changes with all leaves, revs_diff, revisions with history, `_local` documents, long polls.
@Suite(.tags(.concurrency, .sanitizeAddress)) struct LocalPeerTests {
    /// A revision id of generation `generation` whose digest repeats `letter`.
    static func rev(_ generation: Int, _ letter: Character) -> String {
        "\(generation)-" + String(repeating: letter, count: 32)
    }

    static func revision(_ id: String, _ history: [String], _ body: [String: Value], deleted: Bool = false) -> PeerRevision {
        PeerRevision(id: id, revisionID: history[0], deleted: deleted, body: .dictionary(body), history: history)
    }

    @Test func graftsHistoriesAndPicksTheCouchDBWinner() async throws {
        try await withDatabase { db, _ in
            let collection = try db.defaultCollection()
            let peer = try LocalPeer(collection: collection)
            let a = "1-" + String(repeating: "a", count: 32)
            let b2 = "2-" + String(repeating: "b", count: 32)
            let c2 = "2-" + String(repeating: "c", count: 32)
            let c3 = "3-" + String(repeating: "c", count: 32)
            #expect(try await peer.bulkDocs([Self.revision("doc", [b2, a], ["v": .string("b")])]).isEmpty)
            var stored = try #require(try await collection.document(id: "doc"))
            #expect(stored.revisionID == b2)
            #expect(try await collection.count == 1)

            // A conflicting branch with a longer history wins; the loser keeps its body.
            _ = try await peer.bulkDocs([Self.revision("doc", [c3, c2, a], ["v": .string("c")])])
            stored = try #require(try await collection.document(id: "doc"))
            #expect(stored.revisionID == c3)
            #expect(stored.string(forKey: "v") == "c")
            let tree = try collection.revisionTree(id: "doc")
            #expect(Set(tree.liveLeaves.map(\.revisionID)) == [b2, c3])
            try await db.performMaintenance(type: .integrityCheck)
            let fetched = try await peer.bulkGet([RevisionRequest(id: "doc", revisionID: b2, knownAncestors: [])])
            guard case .found(let loser)? = fetched.first else { Issue.record("loser not readable"); return }
            #expect(loser.body == .dictionary(["v": .string("b")]))
            #expect(loser.history == [b2, a])

            // Known revisions are a no-op; a deleted winner branch hands the win to the live one.
            _ = try await peer.bulkDocs([Self.revision("doc", [c3, c2, a], ["v": .string("c")])])
            let c4 = "4-" + String(repeating: "c", count: 32)
            _ = try await peer.bulkDocs([Self.revision("doc", [c4, c3], [:], deleted: true)])
            stored = try #require(try await collection.document(id: "doc"))
            #expect(stored.revisionID == b2)
            #expect(stored.string(forKey: "v") == "b")
            #expect(try await collection.count == 1)
            try await db.performMaintenance(type: .integrityCheck)

            let changes = try await peer.changes(since: nil, limit: 10, documentIDs: nil, wait: .normal)
            #expect(changes.results.count == 1)
            #expect(Set(changes.results[0].leafRevisions) == [b2, c4])
            #expect(changes.results[0].deleted == false)
        }
    }

    @Test func deletingTheWinnerLocallyHandsTheWinToTheConflictingBranch() async throws {
        try await withDatabase { db, _ in
            let collection = try db.defaultCollection()
            let peer = try LocalPeer(collection: collection)
            let root = "1-" + String(repeating: "a", count: 32)
            _ = try await peer.bulkDocs([Self.revision("doc", ["2-" + String(repeating: "b", count: 32), root], ["v": .string("b")])])
            _ = try await peer.bulkDocs([Self.revision("doc", ["2-" + String(repeating: "c", count: 32), root], ["v": .string("c")])])
            let winner = try #require(try await collection.document(id: "doc"))
            #expect(winner.string(forKey: "v") == "c")
            try await collection.delete(document: winner)
            let now = try #require(try await collection.document(id: "doc"))
            #expect(now.string(forKey: "v") == "b")
            #expect(try await collection.count == 1)
            // A local save extends the new winner and keeps the deleted branch closed.
            try await collection.save(document: now.toMutable().setString("b2", forKey: "v"))
            #expect(try collection.revisionTree(id: "doc").liveLeaves.count == 1)
            #expect(try await collection.document(id: "doc")?.revisionID?.hasPrefix("3-") == true)
            try await db.performMaintenance(type: .integrityCheck)
        }
    }

    @Test func revsDiffReportsMissingRevisionsAndPossibleAncestors() async throws {
        try await withDatabase { db, _ in
            let collection = try db.defaultCollection()
            let peer = try LocalPeer(collection: collection)
            let doc = MutableDocument(id: "d").setInt(1, forKey: "n")
            try await collection.save(document: doc)
            let first = try #require(doc.revisionID)
            let later = "3-" + String(repeating: "f", count: 32)
            let diff = try await peer.revsDiff(["d": [first, later], "new": ["1-" + String(repeating: "0", count: 32)]])
            #expect(diff["d"]?.missing == [later])
            #expect(diff["d"]?.possibleAncestors == [first])
            #expect(diff["new"]?.missing.count == 1)
            #expect(try await peer.revsDiff(["d": [first]]).isEmpty)
        }
    }

    @Test func bulkGetStopsHistoryAtAKnownAncestorAndReportsMissingRevisions() async throws {
        try await withDatabase { db, _ in
            let collection = try db.defaultCollection()
            let peer = try LocalPeer(collection: collection)
            let doc = MutableDocument(id: "d")
            var revisions: [String] = []
            for n in 0..<4 {
                doc.setInt(n, forKey: "n")
                try await collection.save(document: doc)
                revisions.append(try #require(doc.revisionID))
            }
            let fetched = try await peer.bulkGet([
                RevisionRequest(id: "d", revisionID: revisions[3], knownAncestors: [revisions[1]]),
                RevisionRequest(id: "d", revisionID: revisions[0], knownAncestors: []),
            ])
            guard case .found(let latest) = fetched[0] else { Issue.record("latest missing"); return }
            #expect(latest.history == [revisions[3], revisions[2], revisions[1]])
            #expect(latest.body == .dictionary(["n": .int(3)]))
            guard case .failed(_, _, let error) = fetched[1] else { Issue.record("an ancestor has no body"); return }
            #expect(error.code == .notFound)
        }
    }

    @Test func latestAnswersASupersededRevisionWithTheLeavesThatReplacedIt() async throws {
        try await withDatabase { db, _ in
            let collection = try db.defaultCollection()
            let peer = try LocalPeer(collection: collection)
            let (a, b2, c2) = (Self.rev(1, "a"), Self.rev(2, "b"), Self.rev(2, "c"))
            _ = try await peer.bulkDocs([
                Self.revision("doc", [b2, a], ["v": .string("b")]),
                Self.revision("doc", [c2, a], ["v": .string("c")]),
            ])
            let grouped = try await peer.bulkGetGrouped([
                RevisionRequest(id: "doc", revisionID: a, knownAncestors: [], latest: true),  // two leaves replaced it
                RevisionRequest(id: "doc", revisionID: b2, knownAncestors: [], latest: true),  // a leaf: itself
                RevisionRequest(id: "doc", revisionID: a, knownAncestors: []),  // without latest: gone
                RevisionRequest(id: "nope", revisionID: a, knownAncestors: [], latest: true),  // unknown: missing
            ])
            func revisions(_ fetches: [RevisionFetch]) -> [String] {
                fetches.map { if case .found(let revision) = $0 { revision.revisionID } else { "missing" } }.sorted()
            }
            #expect(grouped.map(revisions) == [[b2, c2], [b2], ["missing"], ["missing"]])
        }
    }

    @Test func badRevisionsGetPerDocumentErrors() async throws {
        try await withDatabase { db, _ in
            let peer = try LocalPeer(collection: try db.defaultCollection())
            let good = "1-" + String(repeating: "a", count: 32)
            let errors = try await peer.bulkDocs([
                Self.revision("ok", [good], [:]),
                Self.revision("gap", ["3-" + String(repeating: "a", count: 32), good], [:]),
                PeerRevision(id: "", revisionID: good, deleted: false, body: .dictionary([:]), history: [good]),
                PeerRevision(id: "notobject", revisionID: good, deleted: false, body: .int(1), history: [good]),
            ])
            #expect(errors.map(\.id).sorted() == ["", "gap", "notobject"])
            #expect(errors.allSatisfy { $0.error.code == .invalidParameter })
            #expect(try await db.defaultCollection().document(id: "ok") != nil)
            await expectCouchetteError(.invalidParameter) {
                _ = try await peer.changes(since: .string("later"), limit: 1, documentIDs: nil, wait: .normal)
            }
        }
    }

    @Test func changesPageThroughSequencesAndFilterByID() async throws {
        try await withDatabase { db, _ in
            let collection = try db.defaultCollection()
            let peer = try LocalPeer(collection: collection)
            for n in 0..<5 { try await collection.save(document: MutableDocument(id: "d\(n)")) }
            let first = try await peer.changes(since: nil, limit: 3, documentIDs: nil, wait: .normal)
            #expect(first.results.map(\.id) == ["d0", "d1", "d2"])
            let rest = try await peer.changes(since: first.lastSequence, limit: 3, documentIDs: nil, wait: .normal)
            #expect(rest.results.map(\.id) == ["d3", "d4"])
            #expect(rest.lastSequence == .int(5))
            let filtered = try await peer.changes(since: .string("0"), limit: 10, documentIDs: ["d4", "d1"], wait: .normal)
            #expect(filtered.results.map(\.id) == ["d1", "d4"])
            #expect(try await peer.info().updateSequence == .int(5))
        }
    }

    @Test func localDocumentsAreStoredButNotReplicatedOrCounted() async throws {
        try await withDatabase { db, _ in
            let collection = try db.defaultCollection()
            let peer = try LocalPeer(collection: collection)
            #expect(try await peer.localDocument(id: "cp") == nil)
            try await peer.putLocalDocument(id: "cp", .dictionary(["seq": .int(4)]))
            #expect(try await peer.localDocument(id: "cp") == .dictionary(["seq": .int(4)]))
            #expect(try await collection.count == 0)
            #expect(try await peer.changes(since: nil, limit: 10, documentIDs: nil, wait: .normal).results.isEmpty)
            #expect(peer.identifier.hasPrefix("couchette:"))
            #expect(try LocalPeer(collection: collection).identifier == peer.identifier)
        }
    }

    @Test func uuidPersistsAcrossReopen() async throws {
        let directory = try TemporaryDirectory()
        var db = try directory.open("uuid")
        let uuid = try db.reader.uuid()
        #expect(uuid.count == 32)
        try await db.close()
        db = try directory.open("uuid")
        #expect(try db.reader.uuid() == uuid)
        let other = try directory.open("other")
        #expect(try other.reader.uuid() != uuid)
        try await other.close()
        try await db.close()
    }

    @Test func longpollWakesOnACommitAndTimesOutEmpty() async throws {
        try await withDatabase { db, _ in
            let collection = try db.defaultCollection()
            let peer = try LocalPeer(collection: collection)
            let empty = try await peer.changes(since: nil, limit: 10, documentIDs: nil, wait: .longpoll(timeout: .milliseconds(50)))
            #expect(empty.results.isEmpty)
            let waiting = Task { try await peer.changes(since: nil, limit: 10, documentIDs: nil, wait: .longpoll(timeout: .seconds(30))) }
            try await Task.sleep(for: .milliseconds(50))
            try await collection.save(document: MutableDocument(id: "wake"))
            let woken = try await waiting.value
            #expect(woken.results.map(\.id) == ["wake"])
        }
    }

    @Test func graftedDocumentsFireChangeFeeds() async throws {
        try await withDatabase { db, _ in
            let collection = try db.defaultCollection()
            let feed = collection.changes()
            let peer = try LocalPeer(collection: collection)
            _ = try await peer.bulkDocs([Self.revision("pulled", ["1-" + String(repeating: "a", count: 32)], ["x": .int(1)])])
            var iterator = feed.makeAsyncIterator()
            let change = await iterator.next()
            #expect(change?.documentIDs == ["pulled"])
        }
    }
}
