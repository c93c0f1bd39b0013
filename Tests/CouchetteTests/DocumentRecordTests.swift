import Testing

@testable import Couchette

/// The stored form of a document's current record: compact for the ids this library makes,
/// textual for any other id, and records in the earlier layout still decode.
@Suite(.tags(.sanitizeAddress, .sanitizeAddress)) struct DocumentRecordTests {
    private func roundTrip(_ record: DocumentRecord) throws -> DocumentRecord {
        try record.encoded().withUnsafeBytes { try DocumentRecord(decoding: $0) }
    }

    @Test func ownRevisionIdsArePackedAndRoundTrip() throws {
        let body = try ValueEncoder.encode(.dictionary(["a": .int(1)]))
        let revision = try RevisionID.make(parent: "41-" + String(repeating: "0f", count: 16), deleted: false, body: body)
        #expect(RevisionID.packed(revision)?.generation == 42)
        let record = DocumentRecord(isDeleted: false, sequence: 9, expiration: 0, revisionID: revision, body: body)
        #expect(record.encoded().count == 1 + 8 + 4 + 16 + body.count)
        let decoded = try roundTrip(record)
        #expect(decoded.revisionID == revision && decoded.sequence == 9 && decoded.expiration == 0)
        #expect(decoded.body == body && !decoded.isDeleted)
    }

    @Test func otherShapesStayTextAndExpirationsSurvive() throws {
        let digest = String(repeating: "ab", count: 16)
        for id in [
            "3-" + digest.uppercased(), "03-" + digest, "+3-" + digest, "3-abc", "x-" + digest, "0-" + digest,
            "99999999999-" + digest, "7-" + digest + "00",
        ] {
            #expect(RevisionID.packed(id) == nil, "\(id)")
            let decoded = try roundTrip(DocumentRecord(isDeleted: true, sequence: 1, expiration: 1234, revisionID: id, body: []))
            #expect(decoded.revisionID == id && decoded.isDeleted && decoded.expiration == 1234)
        }
    }

    @Test func recordsInTheEarlierLayoutDecode() throws {
        // flags, u64 sequence, u64 expiration, u16 length + id, body: the layout before packing.
        let revision = "2-" + String(repeating: "cd", count: 16)
        var bytes: [UInt8] = [1]
        withUnsafeBytes(of: UInt64(5).littleEndian) { bytes.append(contentsOf: $0) }
        withUnsafeBytes(of: UInt64(0).littleEndian) { bytes.append(contentsOf: $0) }
        withUnsafeBytes(of: UInt16(revision.utf8.count).littleEndian) { bytes.append(contentsOf: $0) }
        bytes.append(contentsOf: revision.utf8)
        bytes.append(contentsOf: [7, 8])
        let decoded = try bytes.withUnsafeBytes { try DocumentRecord(decoding: $0) }
        #expect(decoded.isDeleted && decoded.sequence == 5 && decoded.expiration == 0)
        #expect(decoded.revisionID == revision && decoded.body == [7, 8])
    }

    @Test func aTruncatedRecordIsCorruption() async throws {
        let revision = "2-" + String(repeating: "cd", count: 16)
        let bytes = DocumentRecord(isDeleted: false, sequence: 5, expiration: 0, revisionID: revision, body: []).encoded()
        await expectCouchetteError(.corruption) { _ = try Array(bytes.prefix(20)).withUnsafeBytes { try DocumentRecord(decoding: $0) } }
    }
}
