import Foundation
import Testing

@testable import Couchette

/// The pieces of the bulk write path made to skip copies: MD5 fed in pieces, revision ids made
/// in stored form, records written in place into LMDB's pages, sequence counters kept at hand
/// while a batch writes one collection after another.
@Suite(.tags(.sanitizeAddress)) struct BulkWritePathTests {
    /// MD5 through OpenSSL (``ContentDigest``), an implementation independent of ``PortableMD5``.
    private func openSSLMD5(_ bytes: [UInt8]) throws -> [UInt8] {
        let digest = try ContentDigest(md5: true)
        bytes.withUnsafeBytes { digest.update($0) }
        let name = try #require(digest.finish().md5)
        return try #require(Data(base64Encoded: String(name.dropFirst("md5-".count)))).map { $0 }
    }

    @Test func md5FedInAnyPiecesMatchesOpenSSL() throws {
        var generator = ValueEncodingTests.SeededGenerator(seed: 7)
        for length in 0..<200 {
            let bytes = (0..<length).map { _ in UInt8(truncatingIfNeeded: generator.next()) }
            #expect(PortableMD5.digest(bytes) == (try openSSLMD5(bytes)), "length \(length)")
        }
        for length in [0, 1, 55, 56, 57, 63, 64, 65, 119, 120, 127, 128, 129, 300, 1000] {
            let bytes = (0..<length).map { _ in UInt8(truncatingIfNeeded: generator.next()) }
            let expected = try openSSLMD5(bytes)
            // The same bytes in pieces of every size from 1 to 70.
            for piece in 1...70 {
                var md5 = PortableMD5()
                bytes.withUnsafeBytes { all in
                    var start = 0
                    while start < all.count {
                        let end = min(start + piece, all.count)
                        md5.update(UnsafeRawBufferPointer(rebasing: all[start..<end]))
                        start = end
                    }
                }
                #expect(md5.finish() == expected, "length \(length) in pieces of \(piece)")
            }
        }
    }

    @Test func revisionIdsKeepTheirDefinition() throws {
        // MD5 over the deleted flag, the parent's length and bytes, then the body, joined.
        let body = try ValueEncoder.encode(.dictionary(["a": .int(1), "b": .array([.string("x"), .null])]))
        for (parent, deleted) in [(nil, false), ("1-" + String(repeating: "7e", count: 16), false), ("12-abc", true)] as [(String?, Bool)] {
            let parentBytes = Array((parent ?? "").utf8)
            let joined = [deleted ? 1 : 0, UInt8(parentBytes.count)] + parentBytes + body
            let generation = (parent.flatMap(RevisionID.generation(of:)) ?? 0) + 1
            let expected = "\(generation)-" + RevisionID.hex(try openSSLMD5(joined))
            #expect(try RevisionID.make(parent: parent, deleted: deleted, body: body) == expected)
            let stored = try RevisionID.makeStored(parent: parent, deleted: deleted, body: body)
            #expect(stored.text == expected)
            guard case .packed(let packedGeneration, _) = stored else {
                Issue.record("a revision made here is packed")
                continue
            }
            #expect(Int(packedGeneration) == generation)
        }
        #expect(
            RevisionID.text(generation: 4_294_967_295, digest: (0, .max)) == "4294967295-" + String(repeating: "0", count: 16)
                + String(repeating: "f", count: 16))
    }

    @Test func aParentInStoredFormGivesTheSameRevisionAsItsText() throws {
        // An update hashes its parent formatted on the stack from the packed record: the ids must
        // not change, for every generation width (1 to 10 digits) and for text and missing parents.
        var generator = ValueEncodingTests.SeededGenerator(seed: 21)
        let body = try ValueEncoder.encode(.dictionary(["visits": .int(3), "name": .string("x")]))
        var generations: [UInt32] = [1, 9, 10, 99, 100, 65_535, 4_294_967_294]
        for _ in 0..<40 { generations.append(UInt32.random(in: 1...4_294_967_294, using: &generator)) }
        for generation in generations {
            let digest = (generator.next(), generator.next())
            let parent = StoredRevisionID.packed(generation: generation, digest: digest)
            // The text written independently of the formatting under test.
            let digestBytes: [UInt8] = withUnsafeBytes(of: (digest.0.littleEndian, digest.1.littleEndian)) { Array($0) }
            let text = String(generation) + "-" + RevisionID.hex(digestBytes)
            #expect(parent.text == text)
            for deleted in [false, true] {
                let fromText = try RevisionID.makeStored(parent: text, deleted: deleted, body: body)
                let fromStored = try RevisionID.makeStored(storedParent: parent, deleted: deleted, body: body)
                #expect(fromStored.text == fromText.text, "generation \(generation)")
            }
        }
        for text in [nil, "3-peer-shaped", "1-" + String(repeating: "ab", count: 16)] as [String?] {
            let fromText = try RevisionID.makeStored(parent: text, deleted: false, body: body)
            let fromStored = try RevisionID.makeStored(storedParent: text.map(StoredRevisionID.text), deleted: false, body: body)
            #expect(fromStored.text == fromText.text)
        }
        #expect(throws: CouchetteError.self) {
            try RevisionID.makeStored(storedParent: .packed(generation: .max, digest: (1, 2)), deleted: false, body: body)
        }
    }

    @Test func recordsWrittenInPlaceEqualTheirEncoding() throws {
        let body = try ValueEncoder.encode(.dictionary(["k": .string("v")]))
        let packed = try RevisionID.makeStored(parent: nil, deleted: false, body: body)
        let records = [
            DocumentRecord(isDeleted: false, sequence: 1, expiration: 0, revision: packed, body: body),
            DocumentRecord(isDeleted: true, sequence: 2, expiration: 99, revision: packed, body: []),
            DocumentRecord(isDeleted: false, sequence: 3, expiration: 0, revisionID: packed.text, body: body),
            DocumentRecord(isDeleted: false, sequence: 4, expiration: 7, revisionID: "5-peer-shaped", body: body),
        ]
        for record in records {
            let layout = record.layout
            let bytes = [UInt8](unsafeUninitializedCapacity: layout.size) { buffer, count in
                record.encode(layout, into: UnsafeMutableRawBufferPointer(buffer))
                count = layout.size
            }
            #expect(bytes == record.encoded())
            let decoded = try bytes.withUnsafeBytes { try DocumentRecord(decoding: $0) }
            #expect(decoded.revisionID == record.revisionID && decoded.body == record.body)
            #expect(decoded.sequence == record.sequence && decoded.expiration == record.expiration && decoded.isDeleted == record.isDeleted)
        }
        // A text id this library made is stored packed, as an id made in packed form.
        #expect(records[0].encoded().count == records[2].encoded().count)
    }

    @Test func aBatchAlternatingCollectionsNumbersEachCollectionInOrder() async throws {
        try await withDatabase { database, _ in
            let first = try database.defaultCollection()
            let second = try await database.createCollection(name: "second")
            try await first.save(document: MutableDocument(id: "before").setInt(0, forKey: "n"))
            try await database.inBatch { batch in
                for index in 0..<6 {
                    try batch.save(document: MutableDocument(id: "a\(index)").setInt(index, forKey: "n"), in: first)
                    try batch.save(document: MutableDocument(id: "b\(index)").setInt(index, forKey: "n"), in: second)
                }
            }
            try await database.inBatch { batch in
                try batch.save(document: MutableDocument(id: "a6").setInt(6, forKey: "n"), in: first)
            }
            for index in 0..<7 {
                #expect(try await first.document(id: "a\(index)")?.sequence == UInt64(index + 2))
            }
            for index in 0..<6 {
                #expect(try await second.document(id: "b\(index)")?.sequence == UInt64(index + 1))
            }
            // The counters were written back: the next save in each continues from there.
            let next = MutableDocument(id: "b6")
            try await second.save(document: next)
            #expect(next.sequence == 7)
        }
    }
}
