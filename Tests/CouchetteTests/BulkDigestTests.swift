import Testing

@testable import Couchette

/// Bulk JSON saves hash their bodies on a second thread (`BodyDigester`) and transcode each text
/// with its containers' headers guessed from the previous document (`BinarySink`): the digests
/// must be the document path's, byte for byte, whatever thread computed them, a batch whose body
/// failed must write nothing, and a wrong guess must not change a byte.
@Suite(.tags(.concurrency, .sanitizeAddress)) struct BulkDigestTests {
    /// Revision ids as the document path makes them for a new document with `json`.
    private func expectedRevision(_ json: String) throws -> String {
        try RevisionID.make(parent: nil, deleted: false, body: JSON.encodeBinary(json))
    }

    /// Every digest and body the builder hands the writer, in order.
    private func written(_ builder: inout JSONDocumentBatch.Builder) throws -> [(id: String, body: [UInt8], revision: String)] {
        var written: [(id: String, body: [UInt8], revision: String)] = []
        try builder.finished().forEach { id, body, digest in
            written.append(
                (String(decoding: id, as: UTF8.self), Array(body), StoredRevisionID.packed(generation: 1, digest: digest).text))
        }
        return written
    }

    private static let collection = CollectionSpec(scope: "s", name: "c", number: 1)

    @Test(arguments: [1, 30, 3_000])
    func digestsFromTheDigestThreadAreTheDocumentPaths(count: Int) throws {
        // Sizes from a few bytes to 3 KB: many chunks, bodies crossing chunk ends, buffer growth
        // while chunks are queued on the old buffer.
        let texts = (0..<count).map { number in
            #"{"n":\#(number),"s":"\#(String(repeating: "é", count: number * 7 % 1_500))","a":[\#(number % 5),{"k":null}]}"#
        }
        var builder = JSONDocumentBatch.Builder(collection: Self.collection, control: .lastWriteWins)
        for (number, text) in texts.enumerated() { try builder.append(id: "d\(number)", json: text) }
        let written = try written(&builder)
        #expect(written.count == count)
        for (number, (entry, text)) in zip(written, texts).enumerated() {
            #expect(entry.id == "d\(number)")
            #expect(entry.body == (try JSON.encodeBinary(text)), "body \(number)")
            #expect(entry.revision == (try expectedRevision(text)), "revision \(number)")
        }
    }

    @Test func anAbandonedBuilderIsNeverWritten() throws {
        var builder = JSONDocumentBatch.Builder(collection: Self.collection, control: .lastWriteWins)
        for number in 0..<2_000 {
            try builder.append(id: "d\(number)", json: #"{"n":\#(number),"pad":"\#(String(repeating: "p", count: 200))"}"#)
        }
        builder.abandon()
        #expect(throws: CouchetteError.self) { try builder.finished().forEach { _, _, _ in } }
    }

    @Test func aBatchWhoseBodyFailsWritesNoneOfItsJSONAndTheNextOneWorks() async throws {
        struct Stop: Error {}
        try await withDatabase { database, _ in
            let collection = try database.defaultCollection()
            await #expect(throws: Stop.self) {
                try await database.inBatch { batch in
                    for number in 0..<5_000 { try batch.save(id: "lost-\(number)", json: #"{"n":\#(number)}"#, in: collection) }
                    throw Stop()
                }
            }
            #expect(try await collection.count == 0)
            try await database.inBatch { batch in
                for number in 0..<5_000 { try batch.save(id: "kept-\(number)", json: #"{"n":\#(number)}"#, in: collection) }
            }
            #expect(try await collection.count == 5_000)
            let last = try #require(try await collection.document(id: "kept-4999"))
            #expect(last.revisionID == (try expectedRevision(#"{"n":4999}"#)))
        }
    }

    @Test func wrongHeaderGuessesChangeNoByte() throws {
        let wide = "[" + (0..<9_000).map { "\($0 % 100)" }.joined(separator: ",") + "]"
        // Each text follows one of another shape: more, fewer or no entries where the previous one
        // had some, narrow after wide and wide after narrow, keys out of order and repeated.
        let texts = [
            #"{"a":1,"b":{"c":[1,2,3],"d":{}},"e":[]}"#,
            #"{"a":1,"b":{"c":[1,2,3,4,5,6,7,8,9,10],"d":{"x":1,"y":2}},"e":[[],[[]]]}"#,
            #"{"a":1}"#,
            #"{"b":{"c":\#(wide)},"a":{"z":1,"y":2,"z":3}}"#,
            #"{"a":1,"b":{"c":[1,2,3],"d":{}},"e":[]}"#,
            #"{"z":[{"q":[{"r":[]}]}],"y":{"x":{"w":{"v":{}}}},"a":"\#(String(repeating: "s", count: 70_000))"}"#,
            "{}",
            #"{"a":1,"b":{"c":[1,2,3],"d":{}},"e":[]}"#,
        ]
        var builder = JSONDocumentBatch.Builder(collection: Self.collection, control: .lastWriteWins)
        for (number, text) in texts.enumerated() { try builder.append(id: "d\(number)", json: text) }
        for (number, (entry, text)) in zip(try written(&builder), texts).enumerated() {
            // Against the encoder of parsed values, which has no guesses.
            #expect(entry.body == (try ValueEncoder.encode(JSON.parse(text))), "body \(number)")
        }
    }
}
