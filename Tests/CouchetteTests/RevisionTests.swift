import Testing

@testable import Couchette

@Suite(.tags(.sanitizeAddress, .sanitizeAddress)) struct RevisionTests {
    let body = (try? ValueEncoder.encode(.dictionary(["a": .int(1)]))) ?? []

    @Test func revisionIdsAreDeterministicAndCouchDBShaped() throws {
        let first = try RevisionID.make(parent: nil, deleted: false, body: body)
        #expect(try first == RevisionID.make(parent: nil, deleted: false, body: body))
        #expect(first.wholeMatch(of: /1-[0-9a-f]{32}/) != nil)
        let second = try RevisionID.make(parent: first, deleted: false, body: body)
        #expect(second.hasPrefix("2-"))
        #expect(try second != RevisionID.make(parent: first, deleted: true, body: body))
        #expect(try second != RevisionID.make(parent: first, deleted: false, body: [ValueTag.null]))
        #expect(RevisionID.generation(of: "12-abc") == 12)
        #expect(RevisionID.generation(of: "garbage") == nil)
    }

    @Test func md5MatchesKnownDigests() {
        #expect(RevisionID.hex(RevisionID.md5([])) == "d41d8cd98f00b204e9800998ecf8427e")
        #expect(
            RevisionID.hex(RevisionID.md5(Array("The quick brown fox jumps over the lazy dog".utf8)))
                == "9e107d9d372bb6826bd81d3542a419d6")
    }

    @Test func sameEditOnTwoDatabasesGivesTheSameRevision() async throws {
        let directory = try TemporaryDirectory()
        let one = try directory.open("one")
        let two = try directory.open("two")
        let a = MutableDocument(id: "x", data: ["k": "v", "n": 1])
        let b = MutableDocument(id: "x", data: ["n": 1, "k": "v"])
        try await one.defaultCollection().save(document: a)
        try await two.defaultCollection().save(document: b)
        #expect(a.revisionID == b.revisionID)
        try await one.close()
        try await two.close()
    }

    @Test func treeKeepsAChainAndPrunesToTheMaximumDepth() throws {
        var tree = RevisionTree()
        var parent: String?
        for generation in 1...30 {
            let revision = try RevisionID.make(parent: parent, deleted: false, body: body + [UInt8(generation)])
            tree.add(revision, parent: parent, isDeleted: false, sequence: UInt64(generation), keeping: 20)
            parent = revision
        }
        #expect(tree.nodes.count == 21)
        #expect(tree.winner?.revisionID == parent)
        #expect(tree.history(of: parent!).count == 21)
        let decoded = try tree.encoded().withUnsafeBytes { try RevisionTree(decoding: $0) }
        #expect(decoded == tree)
    }

    @Test func winnerPrefersLiveLeavesThenGenerationThenDigest() {
        var tree = RevisionTree()
        tree.add("1-aaaa", parent: nil, isDeleted: false, sequence: 1)
        tree.add("2-bbbb", parent: "1-aaaa", isDeleted: false, sequence: 2)
        tree.add("2-cccc", parent: "1-aaaa", isDeleted: false, sequence: 3)
        #expect(tree.winner?.revisionID == "2-cccc")
        tree.add("3-dddd", parent: "2-cccc", isDeleted: true, sequence: 4)
        #expect(tree.winner?.revisionID == "2-bbbb")  // a live leaf beats a deleted one
        tree.add("3-0000", parent: "2-bbbb", isDeleted: true, sequence: 5)
        #expect(tree.winner?.revisionID == "3-dddd")  // all deleted: highest revision
        #expect(tree.leafIndices.count == 2)
    }

    @Test func damagedTreesThrowCorruption() {
        let bytes: [UInt8] = [5, 0, 0, 0, 1]
        #expect(throws: CouchetteError.self) { try bytes.withUnsafeBytes { try RevisionTree(decoding: $0) } }
    }
}

@Suite struct PortableMD5Tests {
    @Test(arguments: [
        ("", "d41d8cd98f00b204e9800998ecf8427e"),
        ("a", "0cc175b9c0f1b6a831c399e269772661"),
        ("abc", "900150983cd24fb0d6963f7d28e17f72"),
        ("message digest", "f96b697d7cb7938d525a2f31aaf161d0"),
        ("12345678901234567890123456789012345678901234567890123456789012345678901234567890", "57edf4a22be3c955ac49da2e2107b67a"),
    ])
    func knownDigests(text: String, hex: String) {
        #expect(RevisionID.hex(PortableMD5.digest(Array(text.utf8))) == hex)
    }
}
