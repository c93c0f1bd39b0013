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

    /// The document as the executor's other stages read it, its body copied out of the map.
    func binding() -> SourceBinding {
        SourceBinding(
            id: id, sequence: record.sequence, revision: record.revision, isDeleted: record.isDeleted,
            expiration: record.expiration, body: Datum(EncodedValue(bytes: Array(body))))
    }
}
