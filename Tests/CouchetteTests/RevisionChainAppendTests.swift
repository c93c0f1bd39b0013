import Testing

@testable import Couchette

/// Local edits of a document without branches append one node to its stored history without
/// decoding it (`RevisionTree.appendingToChain`): the bytes must be exactly what decoding, adding
/// and encoding give, and every other shape of history must take the decoding path.
@Suite struct RevisionChainAppendTests {
    private func packedNode(_ revisionID: String, sequence: UInt64, deleted: Bool = false) throws -> RevisionTree.PackedNode {
        let packed = try #require(RevisionID.packed(revisionID))
        return try #require(.init(generation: packed.generation, digest: packed.digest, sequence: sequence, isDeleted: deleted))
    }

    /// Appends through the shortcut and checks it against the decoded tree's add + encode.
    private func appendMatches(
        _ tree: RevisionTree, stored: Bool, parent: String, parentSequence: UInt64, parentDeleted: Bool = false,
        child: String, sequence: UInt64, deleted: Bool, limit: Int
    ) throws -> RevisionTree? {
        let bytes = tree.encoded()
        let appended = try bytes.withUnsafeBytes { raw in
            try RevisionTree.appendingToChain(
                stored ? raw : nil, current: try packedNode(parent, sequence: parentSequence, deleted: parentDeleted),
                child: try packedNode(child, sequence: sequence, deleted: deleted), keeping: limit)
        }
        var expected = tree
        expected.add(child, parent: parent, isDeleted: deleted, sequence: sequence, keeping: limit)
        guard let appended else { return nil }
        #expect(appended == expected.encoded())
        let decoded = try appended.withUnsafeBytes { try RevisionTree(decoding: $0) }
        #expect(decoded == expected)
        return decoded
    }

    @Test func appendingGivesTheBytesOfDecodingAddingAndEncoding() async throws {
        try await onAThreadOfItsOwn {
            var random = SystemRandomNumberGenerator()
            for _ in 0..<50 {
                // A chain started by a single revision (its first edit has no stored tree).
                var parent = try RevisionID.make(parent: nil, deleted: false, body: [UInt8.random(in: 0...255, using: &random)])
                var sequence = UInt64.random(in: 1...300, using: &random)
                var deleted = false
                var tree = RevisionTree()
                tree.add(parent, parent: nil, isDeleted: false, sequence: sequence)
                var stored = false
                for _ in 0..<Int.random(in: 1...40, using: &random) {
                    let isDelete = Int.random(in: 0..<6, using: &random) == 0
                    let child = try RevisionID.make(parent: parent, deleted: isDelete, body: [UInt8.random(in: 0...255, using: &random)])
                    // Sequences grow, by one (varint sizes change at 128) or by jumps; grafts can repeat one.
                    let next = sequence + [0, 1, 1, 120, 20_000].randomElement(using: &random)!
                    let result = try appendMatches(
                        tree, stored: stored, parent: parent, parentSequence: sequence, parentDeleted: deleted,
                        child: child, sequence: next, deleted: isDelete, limit: 1000)
                    tree = try #require(result)
                    stored = true
                    parent = child
                    sequence = next
                    deleted = isDelete
                }
            }
        }
    }

    @Test func otherHistoriesTakeTheDecodingPath() throws {
        let root = try RevisionID.make(parent: nil, deleted: false, body: [1])
        let left = try RevisionID.make(parent: root, deleted: false, body: [2])
        let right = try RevisionID.make(parent: root, deleted: false, body: [3])
        let next = try RevisionID.make(parent: left, deleted: false, body: [4])

        // A conflict: two leaves.
        var branched = RevisionTree()
        branched.add(root, parent: nil, isDeleted: false, sequence: 1)
        branched.add(right, parent: root, isDeleted: false, sequence: 2, body: [9])
        branched.add(left, parent: root, isDeleted: false, sequence: 3)
        #expect(
            try appendMatches(
                branched, stored: true, parent: left, parentSequence: 3, child: next, sequence: 4, deleted: false, limit: 1000) == nil)

        // A chain whose end is not the current revision.
        var chain = RevisionTree()
        chain.add(root, parent: nil, isDeleted: false, sequence: 1)
        chain.add(left, parent: root, isDeleted: false, sequence: 2)
        let stale = try chain.encoded().withUnsafeBytes { raw in
            try RevisionTree.appendingToChain(
                raw, current: try packedNode(root, sequence: 1), child: try packedNode(right, sequence: 3), keeping: 1000)
        }
        #expect(stale == nil)

        // Adding would prune: the limit is reached.
        #expect(
            try appendMatches(chain, stored: true, parent: left, parentSequence: 2, child: next, sequence: 3, deleted: false, limit: 1)
                == nil)
        var single = RevisionTree()
        single.add(root, parent: nil, isDeleted: false, sequence: 1)
        #expect(
            try appendMatches(single, stored: false, parent: root, parentSequence: 1, child: left, sequence: 2, deleted: false, limit: 0)
                == nil)

        // An id of another shape (stored as text) anywhere in the chain.
        var foreign = RevisionTree()
        foreign.add("1-abc", parent: nil, isDeleted: false, sequence: 1)
        let second = try RevisionID.make(parent: "1-abc", deleted: false, body: [5])
        foreign.add(second, parent: "1-abc", isDeleted: false, sequence: 2)
        let third = try RevisionID.make(parent: second, deleted: false, body: [6])
        #expect(
            try appendMatches(
                foreign, stored: true, parent: second, parentSequence: 2, child: third, sequence: 3, deleted: false, limit: 1000) == nil)

        // Implicit fields follow the tree's node, not the record (whose sequence may be newer).
        let newerRecord = try chain.encoded().withUnsafeBytes { raw in
            try RevisionTree.appendingToChain(
                raw, current: try packedNode(left, sequence: 9), child: try packedNode(next, sequence: 2), keeping: 1000)
        }
        var extended = chain
        extended.add(next, parent: left, isDeleted: false, sequence: 2)
        #expect(newerRecord == extended.encoded())

        // Damaged bytes are corruption, not a shortcut.
        var damaged = chain.encoded()
        damaged.removeLast(3)
        #expect(throws: CouchetteError.self) {
            try damaged.withUnsafeBytes { raw in
                try RevisionTree.appendingToChain(
                    raw, current: try packedNode(left, sequence: 2), child: try packedNode(next, sequence: 3), keeping: 1000)
            }
        }
    }

    @Test func savesDeletesAndRecreationsKeepTheFullHistory() async throws {
        try await withDatabase { database, _ in
            let collection = try database.defaultCollection()
            let document = MutableDocument(id: "d").setInt(0, forKey: "v")
            try await collection.save(document: document)
            var revisions = [try #require(document.revisionID)]
            for value in 1...130 {  // past 128 sequences: longer varints
                document.setInt(value, forKey: "v")
                try await collection.save(document: document)
                revisions.append(try #require(document.revisionID))
            }
            let stored = try #require(try await collection.document(id: "d"))
            try await collection.delete(document: stored)
            let tombstone = try #require(try collection.revisionTree(id: "d").winner)
            #expect(tombstone.isDeleted)
            revisions.append(tombstone.revisionID)
            let again = MutableDocument(id: "d").setString("back", forKey: "v")
            try await collection.save(document: again)
            revisions.append(try #require(again.revisionID))

            let tree = try collection.revisionTree(id: "d")
            #expect(tree.history(of: revisions.last!) == Array(revisions.reversed()))
            #expect(tree.liveLeaves.map(\.revisionID) == [revisions.last!])
            #expect(try await collection.document(id: "d")?.string(forKey: "v") == "back")
            try await database.performMaintenance(type: .integrityCheck)
        }
    }
}
