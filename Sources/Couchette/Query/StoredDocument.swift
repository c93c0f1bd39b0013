/// A document an index lookup fetched, as its record lies in the read transaction's memory map:
/// the header already decoded, the body not copied.
///
/// It lives only inside the scan's callback (the bytes belong to LMDB and are valid only while
/// the transaction is): a query projects it in place (``InPlaceProjection``), or makes an owned
/// ``SourceBinding`` of it (``binding()``) before anything of it is kept.
struct StoredDocument {
    let id: String
    let record: DocumentRecord
    /// The encoded body, inside the map (never empty: an empty stored body reads as `{}`).
    let body: UnsafeRawBufferPointer

    /// Calls `visit` with the document `record` (body left empty) and `body` make, unless it is a
    /// design document, which queries never see (``CollectionScan/binding(_:_:)``); true when
    /// there was none to visit.
    static func visit(
        _ id: String, _ record: DocumentRecord, _ body: UnsafeRawBufferPointer, _ visit: (StoredDocument) throws -> Bool
    ) rethrows -> Bool {
        if id.utf8.first == UInt8(ascii: "_"), id.hasPrefix("_design/") { return true }
        if body.isEmpty {
            return try Document.emptyBody.withUnsafeBytes { try visit(StoredDocument(id: id, record: record, body: $0)) }
        }
        return try visit(StoredDocument(id: id, record: record, body: body))
    }

    /// The document as the executor's other stages read it, its body owned (``ownedBody()``).
    func binding() -> SourceBinding {
        SourceBinding(
            id: id, sequence: record.sequence, revision: record.revision, isDeleted: record.isDeleted,
            expiration: record.expiration, body: Datum(EncodedValue(bytes: ownedBody())))
    }

    /// The body as an owned array: the record's own copy when `body` is exactly those bytes (a
    /// full scan copies every body out of the map before visiting it), else a copy made now.
    func ownedBody() -> [UInt8] {
        let isRecordCopy = record.body.withUnsafeBytes { $0.baseAddress == body.baseAddress && $0.count == body.count }
        return isRecordCopy ? record.body : Array(body)
    }
}
