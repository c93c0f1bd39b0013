import Foundation
import Testing

@testable import Couchette

/// Inputs the fuzz harnesses (`scripts/fuzz`) found or that pin down what they check, replayed
/// through the same ``FuzzHarness`` entry points and the APIs under them.
@Suite(.tags(.sanitizeAddress, .sanitizeAddress)) struct FuzzRegressionTests {
    // MARK: - Seeds

    /// Every target's harness runs its first seeds (made from the fixtures) to the end: the
    /// corpora `scripts/fuzz` starts from exist and pass the harness's own checks.
    @Test(arguments: [FuzzTarget.json, .binary, .listener, .document, .multipart])
    func seedsFromTheFixturesPassTheHarness(target: FuzzTarget) async throws {
        try await onAThreadOfItsOwn {
            let seeds = FuzzHarness.seeds(for: target, fixtures: Fixtures.path(""))
            #expect(seeds.count > 100)
            let directory = try TemporaryDirectory()
            let harness = try await FuzzHarness(target: target, directory: directory.path)
            for seed in seeds.prefix(150) { await harness.run(seed) }
            try await harness.close()
        }
    }

    /// The listener input layout: request line, headers, blank line, body.
    @Test func listenerInputsSplitIntoRequests() {
        let request = FuzzHarness.request(
            from: Array("POST /db/_changes?feed=longpoll&timeout=60000\nContent-Type: application/json\nX-A:b:c\n\n{\"x\":1}".utf8))
        #expect(request.method == "POST")
        #expect(request.path == "/db/_changes")
        #expect(request.query["feed"] == "longpoll")
        #expect(request.query["timeout"] == "10")
        #expect(request.header("content-type") == "application/json")
        #expect(request.header("x-a") == "b:c")
        #expect(String(decoding: request.body, as: UTF8.self) == #"{"x":1}"#)
        #expect(FuzzHarness.request(from: []).path == "/")
    }

    // MARK: - Binary values

    /// A narrow array header (tag, u16 size, u16 count) followed by `slots` offsets.
    private func narrowArray(size: Int, slots: [Int]) -> [UInt8] {
        var bytes: [UInt8] = [ValueTag.narrowArray, UInt8(size & 0xFF), UInt8(size >> 8), UInt8(slots.count), 0]
        for slot in slots { bytes += [UInt8(slot & 0xFF), UInt8(slot >> 8)] }
        return bytes
    }

    /// Damaged offsets that let two slots share one child make a DAG: 40 levels of two slots on
    /// the same child meant 2^40 visits, and `decode()` never returned. Children must now lie in
    /// their own windows: the first slot's is empty and reads as null, the last one goes on.
    @Test func slotsSharingAChildDecodeInLinearTime() {
        let levels = 40
        var bytes: [UInt8] = [ValueTag.null]
        for _ in 0..<levels {
            let size = 9 + bytes.count
            bytes = narrowArray(size: size, slots: [9, 9]) + bytes
        }
        let started = ContinuousClock.now
        let value = EncodedValue(bytes: bytes).decode()
        #expect(ContinuousClock.now - started < .seconds(5))
        var depth = 0
        var current = value
        while case .array(let elements) = current, elements.count == 2 {
            #expect(elements[0] == .null)
            depth += 1
            current = elements[1]
        }
        #expect(depth == levels)
        _ = ValueConversion.plain(EncodedValue(bytes: bytes))
        FuzzHarness.runBinary(bytes)
    }

    /// 200,000 nested one-element arrays (2.6 MB, beyond what any writer makes) overflowed the
    /// stack of every recursive reader; a container below 512 levels reads as empty now.
    @Test func damagedNestingDeeperThanAnyWriterMakesStopsAtTheLimit() {
        let levels = 200_000
        var bytes = [UInt8](repeating: 0, count: levels * 13 + 1)
        for level in 0..<levels {
            let start = level * 13
            let size = bytes.count - start
            bytes[start] = ValueTag.array
            for index in 0..<4 { bytes[start + 1 + index] = UInt8(truncatingIfNeeded: size >> (8 * index)) }
            bytes[start + 5] = 1
            bytes[start + 9] = 13
        }
        bytes[bytes.count - 1] = ValueTag.trueValue
        let root = EncodedValue(bytes: bytes)
        var depth = 0
        var current = root.decode()
        while case .array(let elements) = current, let first = elements.first {
            depth += 1
            current = first
        }
        #expect(depth == ValueEncoder.maximumDepth)
        #expect(current == .array([]))
        _ = ValueConversion.plain(root)
        _ = Document(id: "deep", revisionID: nil, sequence: 0, body: bytes).toJSON()
    }

    /// A container whose child claims to be larger than the space left before the next slot.
    @Test func childOverrunningItsWindowReadsAsMissing() throws {
        let valid = try ValueEncoder.encode(.array([.string("abc"), .int(7)]))
        #expect(EncodedValue(bytes: valid).decode() == .array([.string("abc"), .int(7)]))
        var damaged = valid
        let first = 9  // narrow header (5) + two u16 slots: the string's tag
        #expect(damaged[first] == ValueTag.string)
        damaged[first + 1] = 5  // length 5 runs into the integer
        #expect(EncodedValue(bytes: damaged).element(at: 0) == nil)
        #expect(EncodedValue(bytes: damaged).element(at: 1)?.integer == 7)
    }

    // MARK: - Replicated documents

    /// The document fuzz target's first crash: a peer's `_rev` with generation `Int.max` was
    /// grafted, and the next local edit trapped computing generation + 1.
    @Test func peerRevisionBeyondTheHighestGenerationIsRefusedAtTheDoor() async throws {
        let input = #"{"_id":"d09","_rev":"9223372036854775807-a2-c98e6126b7167f6b86e0f838d03","type":"item"}"#
        await expectCouchetteError(.invalidParameter) { _ = try CouchDBDocument.revision(from: try JSON.parse(input)) }
        #expect(RevisionID.generation(of: "4294967296-a") == nil)
        #expect(RevisionID.generation(of: "4294967295-a") == RevisionID.maximumGeneration)
        let directory = try TemporaryDirectory()
        let harness = try await FuzzHarness(target: .document, directory: directory.path)
        await harness.run(Array(input.utf8))
        try await harness.close()
    }

    /// A peer's revision id longer than a record can hold (its length is stored in 16 bits) used
    /// to trap when written; now it is refused at the door like any malformed id.
    @Test func overlongPeerRevisionIdsAreRefusedAtTheDoor() async throws {
        let long = "2-" + String(repeating: "a", count: 70_000)
        #expect(RevisionID.generation(of: long) == nil)
        #expect(RevisionID.generation(of: "2-" + String(repeating: "a", count: RevisionID.maximumLength - 2)) == 2)
        let input = #"{"_id":"long","_rev":"\#(long)","type":"item"}"#
        await expectCouchetteError(.invalidParameter) { _ = try CouchDBDocument.revision(from: try JSON.parse(input)) }
        try await withDatabase { database, _ in
            let collection = try database.defaultCollection()
            let peer = try LocalPeer(collection: collection)
            let errors = try await peer.bulkDocs([
                PeerRevision(id: "long", revisionID: long, deleted: false, body: .dictionary(["n": .int(1)]), history: [long])
            ])
            #expect(!errors.isEmpty)
            #expect(try await collection.document(id: "long") == nil)
        }
    }

    /// A revision at the highest generation can arrive, but nothing can follow it: a local edit
    /// is refused with a clear error and the replicated revision stays as it was.
    @Test func editAfterTheHighestGenerationThrowsAndKeepsTheDocument() async throws {
        try await withDatabase { database, _ in
            let collection = try database.defaultCollection()
            let peer = try LocalPeer(collection: collection)
            let top = "\(RevisionID.maximumGeneration)-abc"
            let errors = try await peer.bulkDocs([
                PeerRevision(
                    id: "top", revisionID: top, deleted: false,
                    body: .dictionary(["n": .int(1)]), history: [top])
            ])
            #expect(errors.isEmpty)
            let stored = try #require(try await collection.document(id: "top"))
            #expect(stored.revisionID == top)
            let message = await expectCouchetteError(.invalidParameter) {
                try await collection.save(document: stored.toMutable().setString("x", forKey: "edit"))
            }
            #expect(message?.contains("the highest") == true)
            await expectCouchetteError(.invalidParameter) { try await collection.delete(document: stored) }
            let after = try #require(try await collection.document(id: "top"))
            #expect(after.revisionID == top)
            #expect(after.toJSON() == #"{"n":1}"#)
        }
    }
}
