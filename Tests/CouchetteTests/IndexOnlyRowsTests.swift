import Foundation
import Testing

@testable import Couchette

/// An ordered index walk whose columns are the document id and ORDER BY paths reads its rows from
/// the index entries (``DirectIndexLookup``): the rows equal the general executor's for strings
/// (with NUL bytes, non-ASCII, empty), booleans, null, MISSING and numbers (which the key cannot
/// give back, so their documents are read), deleted and design documents; an expiration due
/// turns it off (``StoreSnapshot/anyExpiration(dueBy:)``), and `explain()` says when it runs. The key decoding gives values back exactly or
/// not at all.
@Suite(.tags(.sanitizeAddress)) struct IndexOnlyRowsTests {
    private static let entryLine = "columns read from the index entries"

    /// Values of `day` and `rank`: strings that sort in many places, with ties.
    private static func body(_ number: Int) -> [String: Any] {
        let days = ["2000-01-01", "2000-01-02", "a\u{0}b", "a", "", "é", "😀 day", "2000-01-01\u{0}"]
        var body: [String: Any] = ["day": days[number % days.count], "other": number]
        switch number % 6 {
        case 0: body["rank"] = true
        case 1: body["rank"] = NSNull()
        case 2: break  // MISSING
        case 3: body["rank"] = number  // a number: read from the document
        case 4: body["rank"] = "r\(number % 3)"
        default: body["rank"] = Double(number) + 0.5
        }
        return body
    }

    private static func load(_ database: Database, count: Int) async throws -> Couchette.Collection {
        let collection = try database.defaultCollection()
        try await database.inBatch { batch in
            for number in 0..<count {
                try batch.save(document: MutableDocument(id: "doc-\(number)", data: Self.body(number)), in: collection)
            }
            try batch.save(document: MutableDocument(id: "_design/app", data: Self.body(0)), in: collection)
        }
        try await collection.createIndex(withName: "by-day", config: ValueIndexConfiguration(["day"]))
        try await collection.createIndex(withName: "by-day-rank", config: ValueIndexConfiguration(["day", "rank"]))
        try await collection.createIndex(withName: "by-rank-day", config: ValueIndexConfiguration(["rank", "day"]))
        for number in stride(from: 4, to: count, by: 9) {
            try await collection.delete(document: try #require(try await collection.document(id: "doc-\(number)")))
        }
        return collection
    }

    /// The lean query's rows, the general executor's (DISTINCT never takes the direct path), and
    /// the lean query's explanation.
    private static func compare(_ database: Database, _ text: String, _ parameters: Parameters) async throws -> (
        lean: [String], general: [String], explained: String
    ) {
        let lean = try database.createQuery(text)
        let general = try database.createQuery(text.replacingOccurrences(of: "SELECT ", with: "SELECT DISTINCT "))
        lean.parameters = parameters
        general.parameters = parameters
        return (
            try await lean.execute().map { $0.toJSON() }, try await general.execute().map { $0.toJSON() }, try await lean.explain()
        )
    }

    @Test func rowsFromEntriesEqualTheGeneralExecutor() async throws {
        try await withDatabase { database, _ in
            _ = try await Self.load(database, count: 240)
            let queries = [
                "SELECT META().id AS id, day FROM _ WHERE day >= $value ORDER BY day LIMIT 30",
                "SELECT day, META().id FROM _ WHERE day >= $value ORDER BY day LIMIT 1000",
                "SELECT META().id AS id, day FROM _ WHERE day <= $value ORDER BY day DESC LIMIT 25 OFFSET 3",
                // Two ORDER BY keys: the second column holds booleans, null, MISSING, strings and
                // numbers (whose rows are read from their documents).
                "SELECT META().id AS id, rank, day FROM _ WHERE day >= $value ORDER BY day, rank LIMIT 50",
                "SELECT META().id AS id, day, rank FROM _ WHERE day <= $value ORDER BY day DESC, rank DESC LIMIT 70",
                "SELECT META().id AS id, rank, day FROM _ WHERE rank <= $value ORDER BY rank DESC, day DESC LIMIT 50",
            ]
            let values: [String] = ["", "a", "2000-01-01", "2000-01-01\u{0}", "é", "zzz", "r1"]
            var compared = 0
            for text in queries {
                for value in values {
                    let (lean, general, explained) = try await Self.compare(database, text, Parameters().setString(value, forName: "value"))
                    #expect(lean == general, "\(text) with \(value.debugDescription)")
                    #expect(explained.contains(Self.entryLine), "\(text): \(explained)")
                    #expect(!lean.contains { $0.contains("_design") })
                    compared += general.count
                }
            }
            #expect(compared > 1500)
        }
    }

    @Test func aColumnTheIndexDoesNotHoldReadsTheDocuments() async throws {
        try await withDatabase { database, _ in
            _ = try await Self.load(database, count: 60)
            let text = "SELECT META().id AS id, day, other FROM _ WHERE day >= $value ORDER BY day LIMIT 20"
            let (lean, general, explained) = try await Self.compare(database, text, Parameters().setString("a", forName: "value"))
            #expect(lean == general && lean.count == 20)
            #expect(explained.contains("DIRECT LOOKUP") && !explained.contains(Self.entryLine))
        }
    }

    @Test func anExpirationDueReadsTheDocuments() async throws {
        try await withDatabase { database, _ in
            let collection = try await Self.load(database, count: 90)
            let text = "SELECT META().id AS id, day FROM _ WHERE day >= $value ORDER BY day LIMIT 40"
            let parameters = Parameters().setString("", forName: "value")
            // An expiration in the future: nothing can have expired, entries still serve.
            try await collection.setDocumentExpiration(id: "doc-1", expiration: Date(timeIntervalSinceNow: 3600))
            var (lean, general, explained) = try await Self.compare(database, text, parameters)
            #expect(lean == general && explained.contains(Self.entryLine))
            #expect(lean.contains { $0.contains("\"doc-1\"") })
            // One due: its entry stays in the index until the sweeper purges the document (at
            // any moment from now on), so until then documents are read and it is left out.
            try await collection.setDocumentExpiration(id: "doc-1", expiration: Date(timeIntervalSinceNow: -60))
            (lean, general, explained) = try await Self.compare(database, text, parameters)
            #expect(lean == general && explained.contains("DIRECT LOOKUP"))
            #expect(!lean.contains { $0.contains("\"doc-1\"") })
        }
    }

    @Test func expirationsAreDueFromTheirMillisecond() async throws {
        try await withDatabase { database, _ in
            let collection = try await Self.load(database, count: 10)
            let spec = collection.spec
            #expect(try database.reader.read { try $0.anyExpiration(dueBy: .max) } == false, "none set")
            let due = Date(timeIntervalSinceNow: 3600)
            try await collection.setDocumentExpiration(id: "doc-2", expiration: due)
            let stored = try #require(try database.reader.read { try $0.record(spec, "doc-2")?.expiration })
            #expect(try database.reader.read { try $0.anyExpiration(dueBy: stored - 1) } == false)
            #expect(try database.reader.read { try $0.anyExpiration(dueBy: stored) } == true)
            try await collection.setDocumentExpiration(id: "doc-2", expiration: nil)
            #expect(try database.reader.read { try $0.anyExpiration(dueBy: .max) } == false, "cleared")
        }
    }

    @Test func keysGiveBackExactlyWhatTheyCan() {
        let exact: [Datum?] = [
            nil, .null, .bool(false), .bool(true), .string(""), .string("a\u{0}b\u{0}"), .string("\u{0}"), .string("é😀"),
            .string(String(repeating: "x", count: 400)),
        ]
        for value in exact {
            let bytes = IndexKey.encode(value) + IndexKey.encode(.string("next"))
            let decoded = bytes.withUnsafeBytes { IndexKey.exactScalar(in: $0, at: 0) }
            #expect(decoded.map { String(describing: $0) } == String(describing: value))
            let second = bytes.withUnsafeBytes { buffer in
                IndexKey.end(of: buffer, at: 0).flatMap { IndexKey.exactScalar(in: buffer, at: $0) }
            }
            #expect(second.map { String(describing: $0) } == String(describing: Datum?.some(.string("next"))))
        }
        // Numbers share encodings (1 and 1.0), containers hold numbers, cut keys end early.
        let inexact: [[UInt8]] = [
            IndexKey.encode(.int(1)), IndexKey.encode(.double(1.5)), IndexKey.encode(.array([.string("a")])),
            Array(IndexKey.encode(.string("abcdef")).dropLast(2)), Array(IndexKey.encode(.string("abc")).dropLast()), [], [0x09],
        ]
        for bytes in inexact {
            #expect(bytes.withUnsafeBytes { IndexKey.exactScalar(in: $0, at: 0) } == nil, "\(bytes)")
        }
    }
}
