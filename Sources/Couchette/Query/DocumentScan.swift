/// Where a query's documents come from.
///
/// A ``CollectionScan`` reads every document of a collection in id order; an ``IndexedScan``
/// lets the ``IndexPlanner`` pick index ranges at each execution and looks the documents up.
/// The executor only needs this protocol.
protocol DocumentScan: Sendable, CustomStringConvertible {
    /// Calls `body` for every visible document in `snapshot`, until it returns false.
    /// A scan that delivers rows in ORDER BY order says so in `order`, and stops at the end of a
    /// tie group once `isSatisfied()` (the executor has all the rows it needs). A scan may pass
    /// over documents whose stored body `filter` rejects (``BodyFilter``); it need not.
    func forEach(
        _ snapshot: StoreSnapshot, now: UInt64, context: EvaluationContext,
        order: ScanOrder, isSatisfied: () -> Bool, filter: BodyFilter?, _ body: (SourceBinding) throws -> Bool) throws

    /// What this execution would do (explain()).
    func explain(_ snapshot: StoreSnapshot, context: EvaluationContext) throws -> String
}

/// What a scan tells the executor about the order of its rows, while it runs.
///
/// Unchecked exclusivity: one execution on one thread owns it, and its flags are only read and
/// assigned (never passed `inout`), so accesses cannot overlap; the runtime check ran for every
/// row an ordered walk delivered.
final class ScanOrder {
    /// Set by a scan that delivers rows in ORDER BY order, each tie group in id order (the
    /// order a full scan's ties have), so the executor keeps rows as they come instead of sorting.
    @exclusivity(unchecked) var inOrder = false
    /// Cleared when a tie group may hold rows whose ORDER BY values differ (cut keys, numbers
    /// beyond 2^53): the executor sorts what it kept after all.
    @exclusivity(unchecked) var exact = true
    /// Set by a scan whose every row passes the WHERE (an index range that decides it exactly,
    /// ``IndexPlanner/Range/decidesWhere``): the executor does not evaluate it again.
    @exclusivity(unchecked) var passesWhere = false
    /// Set by a full scan for the row it is delivering when the body precheck found each
    /// conjunct of the filter after the scan true (``BodyFilter/Judgement/passes``): the
    /// executor does not evaluate that filter on it again.
    @exclusivity(unchecked) var rowPassesFilter = false
}

extension DocumentScan {
    func explain(_ snapshot: StoreSnapshot, context: EvaluationContext) throws -> String { description }
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

    func forEach(
        _ snapshot: StoreSnapshot, now: UInt64, context: EvaluationContext,
        order: ScanOrder, isSatisfied: () -> Bool, filter: BodyFilter?, _ body: (SourceBinding) throws -> Bool
    ) throws {
        let rejects = filter?.skipsRejected(reportingTo: order)
        try snapshot.forEachVisibleRecord(collection, now: now, includingDeleted: includeDeleted, skipping: rejects) { id, record in
            guard let binding = Self.binding(id, record) else { return true }
            return try body(binding)
        }
    }

    /// ``forEach(_:now:context:order:isSatisfied:filter:_:)`` for a projection in place
    /// (``InPlaceProjection``): each visible document as a ``StoredDocument`` over the copy of
    /// its body the walk made (which a column of the whole document then keeps, with no second
    /// copy), without a ``SourceBinding`` or evaluators per row.
    func forEachStored(
        _ snapshot: StoreSnapshot, now: UInt64, order: ScanOrder, filter: BodyFilter?, _ body: (StoredDocument) throws -> Bool
    ) throws {
        let rejects = filter?.skipsRejected(reportingTo: order)
        try snapshot.forEachVisibleRecord(collection, now: now, includingDeleted: includeDeleted, skipping: rejects) { id, record in
            try record.body.withUnsafeBytes { try StoredDocument.visit(id, record, $0, body) }
        }
    }

    /// The document `id` of `collection` as a query sees it, or nil when it is not visible
    /// (``StoreSnapshot/visibleRecord(_:_:now:includingDeleted:)``) or a design document: what
    /// index lookups and joins by id read.
    static func lookup(
        _ snapshot: StoreSnapshot, _ collection: CollectionSpec, _ id: String, now: UInt64,
        includeDeleted: Bool
    ) throws -> SourceBinding? {
        // The record read where it lies (its key on the stack), only the body copied: joins on
        // `META(joined).id` look up one document per outer row.
        let found = try snapshot.withVisibleRecord(collection, id, now: now, includingDeleted: includeDeleted) { header, body in
            var record = header
            record.body = Array(body)
            return binding(id, record)
        }
        return found ?? nil
    }

    /// The binding of a visible record, or nil for a design document. Every way a query reaches
    /// a document (scans, index lookups, joins) comes through here.
    static func binding(_ id: String, _ record: DocumentRecord) -> SourceBinding? {
        if id.utf8.first == UInt8(ascii: "_"), id.hasPrefix("_design/") { return nil }  // the byte first: cheap per row
        let root = EncodedValue(bytes: record.body.isEmpty ? Document.emptyBody : record.body)
        return SourceBinding(
            id: id, sequence: record.sequence, revision: record.revision,
            isDeleted: record.isDeleted, expiration: record.expiration, body: Datum(root))
    }
}
