/// Where a query's documents come from.
///
/// A ``CollectionScan`` reads every document of a collection in id order; an ``IndexedScan``
/// lets the ``IndexPlanner`` pick index ranges at each execution and looks the documents up.
/// The executor only needs this protocol.
protocol DocumentScan: Sendable, CustomStringConvertible {
    /// Calls `body` for every visible document inside `txn`, until it returns false.
    /// A scan that delivers rows in ORDER BY order says so in `order`, and stops at the end of a
    /// tie group once `isSatisfied()` (the executor has all the rows it needs).
    func forEach(_ txn: ReadTransaction, core: DatabaseCore, now: UInt64, context: EvaluationContext,
                 order: ScanOrder, isSatisfied: () -> Bool, _ body: (SourceBinding) throws -> Bool) throws

    /// What this execution would do (explain()).
    func explain(_ txn: ReadTransaction, core: DatabaseCore, context: EvaluationContext) throws -> String
}

/// What a scan tells the executor about the order of its rows, while it runs.
final class ScanOrder {
    /// Set by a scan that delivers rows in ORDER BY order, each tie group in id order (the
    /// order a full scan's ties have), so the executor keeps rows as they come instead of sorting.
    var inOrder = false
    /// Cleared when a tie group may hold rows whose ORDER BY values differ (cut keys, numbers
    /// beyond 2^53): the executor sorts what it kept after all.
    var exact = true
}

extension DocumentScan {
    func explain(_ txn: ReadTransaction, core: DatabaseCore, context: EvaluationContext) throws -> String { description }
}

/// Every document of one collection, read from the `documents` table in key (document id) order.
/// Expired documents are absent; deleted ones (tombstones) only when `includeDeleted`; design
/// documents (`_design/…`, CouchDB's views and validation functions, kept so that they replicate)
/// never: they are not data, and CouchDB's Mango leaves them out of its results too.
struct CollectionScan: DocumentScan {
    let collection: CollectionSpec
    let includeDeleted: Bool

    var description: String {
        "SCAN \(collection.fullName)\(includeDeleted ? " (including deleted)" : "")"
    }

    func forEach(_ txn: ReadTransaction, core: DatabaseCore, now: UInt64, context: EvaluationContext,
                 order: ScanOrder, isSatisfied: () -> Bool, _ body: (SourceBinding) throws -> Bool) throws {
        let prefix = StoreLayout.collectionPrefix(collection.number)
        try txn.scan(core.store.tables.documents, prefix: prefix) { key, value in
            let id = String(decoding: key[prefix.count...], as: UTF8.self)
            guard let binding = try Self.binding(id, value, now: now, includeDeleted: includeDeleted) else { return true }
            return try body(binding)
        }
    }

    /// The binding of a stored record, or nil when it is expired (or deleted and not wanted) or a
    /// design document. Every way a query reaches a document (scans, index lookups, joins) comes
    /// through here.
    static func binding(_ id: String, _ value: UnsafeRawBufferPointer, now: UInt64,
                        includeDeleted: Bool) throws -> SourceBinding? {
        if id.hasPrefix("_design/") { return nil }
        let record = try DocumentRecord(decoding: value)
        guard record.isVisible(now: now, includingDeleted: includeDeleted) else { return nil }
        let root = EncodedValue(bytes: record.body.isEmpty ? Document.emptyBody : record.body)
        return SourceBinding(id: id, sequence: record.sequence, revisionID: record.revisionID,
                             isDeleted: record.isDeleted, expiration: record.expiration, body: Datum(root))
    }
}
