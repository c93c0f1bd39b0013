import Foundation
import Testing

@testable import Couchette

/// Revision histories keep 1,000 ancestor ids per branch by default (CouchDB's `revs_limit`),
/// compactly (raw 16-byte digests, implicit generations), configurable per database; what
/// replication sends follows from them.
@Suite(.tags(.concurrency, .sanitizeAddress)) struct RevisionHistoryTests {
    private func chain(_ length: Int) throws -> RevisionTree {
        var tree = RevisionTree()
        var parent: String?
        for generation in 1...length {
            let revision = try RevisionID.make(parent: parent, deleted: false, body: [UInt8(generation & 0xFF), UInt8(generation >> 8)])
            tree.add(revision, parent: parent, isDeleted: false, sequence: UInt64(generation))
            parent = revision
        }
        return tree
    }

    @Test func aThousandGenerationChainIsStoredInAbout20BytesARevision() throws {
        let tree = try chain(1001)
        #expect(tree.nodes.count == 1001)
        let bytes = tree.encoded()
        #expect(bytes.count < 1001 * 21, "\(bytes.count) bytes")
        let decoded = try bytes.withUnsafeBytes { try RevisionTree(decoding: $0) }
        #expect(decoded == tree)
        // One more: the oldest falls off, 1,000 ancestors stay.
        var longer = tree
        longer.add(
            try RevisionID.make(parent: tree.winner?.revisionID, deleted: false, body: [1]), parent: tree.winner?.revisionID,
            isDeleted: false, sequence: 2000)
        #expect(longer.nodes.count == 1001 && longer.history(of: longer.winner!.revisionID).count == 1001)
    }

    @Test func unusualRevisionIdsBranchesAndBodiesRoundTrip() throws {
        var tree = RevisionTree()
        tree.add("1-abc", parent: nil, isDeleted: false, sequence: 7)
        tree.add("2-0785E9EB543380151003DC452C3A001A", parent: "1-abc", isDeleted: false, sequence: 7)
        tree.add("2-0785e9eb543380151003dc452c3a001a", parent: "1-abc", isDeleted: false, sequence: 9, body: [1, 2, 3])
        tree.add("4-ffffffffffffffffffffffffffffffff", parent: "2-0785E9EB543380151003DC452C3A001A", isDeleted: true, sequence: 1 << 40)
        let decoded = try tree.encoded().withUnsafeBytes { try RevisionTree(decoding: $0) }
        #expect(decoded == tree)
    }

    @Test func treesStoredInTheEarlierEncodingStillRead() throws {
        // u32 count; per node u8 flags, u32 parent, u64 sequence, u16 length + id.
        func node(_ flags: UInt8, _ parent: UInt32, _ sequence: UInt64, _ id: String) -> [UInt8] {
            [flags] + withUnsafeBytes(of: parent.littleEndian, Array.init) + withUnsafeBytes(of: sequence.littleEndian, Array.init)
                + withUnsafeBytes(of: UInt16(id.utf8.count).littleEndian, Array.init) + Array(id.utf8)
        }
        let bytes = withUnsafeBytes(of: UInt32(2).littleEndian, Array.init) + node(0, 0, 1, "1-aa") + node(2, 0, 2, "2-bb")
        let tree = try bytes.withUnsafeBytes { try RevisionTree(decoding: $0) }
        #expect(tree.history(of: "2-bb") == ["2-bb", "1-aa"] && tree.nodes[1].sequence == 2)
        let damaged = RevisionTree.compactMarker + [3, 0x0A]
        #expect(throws: CouchetteError.self) { try damaged.withUnsafeBytes { try RevisionTree(decoding: $0) } }
    }

    @Test func theLimitIsConfigurablePerDatabase() async throws {
        let directory = try TemporaryDirectory()
        var config = directory.configuration
        config.maxRevisionHistory = 5
        let db = try Database(name: "short", config: config)
        let collection = try db.defaultCollection()
        let document = MutableDocument(id: "d")
        for n in 0..<10 {
            document.setInt(n, forKey: "n")
            try await collection.save(document: document)
        }
        #expect(try collection.revisionTree(id: "d").history(of: try #require(document.revisionID)).count == 6)
        try await db.close()
        config.maxRevisionHistory = 0
        #expect(throws: CouchetteError.self) { try Database(name: "zero", config: config) }
    }

    /// Thirty local edits between two syncs: with 1,000 ids kept the peer sees a descendant; with
    /// CouchDB's old cut at 20 (this database's previous limit) it recorded a false conflict.
    @Test(arguments: [1000, 20]) func thirtyEditsBetweenSyncsAreNoConflict(limit: Int) async throws {
        let directory = try TemporaryDirectory()
        var config = directory.configuration
        config.maxRevisionHistory = limit
        let local = try Database(name: "local", config: config)
        let remote = try directory.open("remote")
        let mine = try local.defaultCollection(), theirs = try remote.defaultCollection()
        try await withListener([theirs]) { listener, _ in
            let replicator = try Replicator(config: makeConfig(local, URLEndpoint(url: listener.urls[0]), .push))
            let document = MutableDocument(id: "edited").setInt(0, forKey: "n")
            try await mine.save(document: document)
            _ = await runToCompletion(replicator)
            for n in 1...30 {
                document.setInt(n, forKey: "n")
                try await mine.save(document: document)
            }
            _ = await runToCompletion(replicator)
            let leaves = try theirs.revisionTree(id: "edited").liveLeaves.count
            #expect(leaves == (limit >= 30 ? 1 : 2))
            if limit >= 30 { #expect(try await theirs.document(id: "edited")?.revisionID == document.revisionID) }
        }
        try await local.close()
        try await remote.close()
    }

    /// A document that arrived with 1,000 ancestors (as from CouchDB), then edited here: its
    /// newest 1,001 ids are kept, pushed, stored by the peer and served in `_revisions`.
    /// (1,000 local saves show the same but take ~15 s in a debug build: each save rewrites the tree.)
    @Test func aThousandDeepHistorySurvivesAndIsSent() async throws {
        try await withTwoDatabases { local, remote in
            let mine = try local.defaultCollection(), theirs = try remote.defaultCollection()
            let body = try ValueEncoder.encode(.dictionary(["n": .int(0)]))
            var history: [String] = []
            for generation in 1...1000 {
                history.insert(try RevisionID.make(parent: history.first, deleted: false, body: body + [UInt8(generation & 0xFF)]), at: 0)
            }
            _ = try await mine.graft([GraftedRevision(id: "deep", revisionID: history[0], isDeleted: false, body: body, history: history)])
            let document = try #require(try await mine.document(id: "deep")?.toMutable())
            for n in 1...5 {
                document.setInt(n, forKey: "n")
                try await mine.save(document: document)
            }
            let head = try #require(document.revisionID)
            #expect(RevisionID.generation(of: head) == 1005)
            let kept = try mine.revisionTree(id: "deep").history(of: head)
            #expect(kept.count == 1001 && kept.last == history[995])  // generation 5: 1,000 ancestors
            try await withListener([theirs]) { listener, base in
                let replicator = try Replicator(config: makeConfig(local, URLEndpoint(url: listener.urls[0]), .push))
                _ = await runToCompletion(replicator)
                #expect(try theirs.revisionTree(id: "deep").history(of: head).count == 1001)
                let read = try await httpRequest("GET", base + "/\(remote.name)/deep?revs=true")
                guard case .array(let ids)? = read.json?["_revisions"]?["ids"] else {
                    Issue.record("no _revisions: \(read.text.prefix(200))")
                    return
                }
                #expect(read.json?["_revisions"]?["start"] == .int(1005) && ids.count == 1001)
                let bulk = try await httpRequest(
                    "POST", base + "/\(remote.name)/_bulk_get?revs=true",
                    body: #"{"docs":[{"id":"deep","rev":"\#(head)"}]}"#)
                guard case .array(let bulkIDs)? = bulk.json?["results"]?[0]?["docs"]?[0]?["ok"]?["_revisions"]?["ids"] else {
                    Issue.record("no _revisions in _bulk_get: \(bulk.text.prefix(200))")
                    return
                }
                #expect(bulkIDs.count == 1001)
            }
        }
    }
}
