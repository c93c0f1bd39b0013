import Foundation
import Testing

@testable import Couchette

/// What a read hands out owns its bytes: documents and query rows read inside an LMDB read
/// transaction stay whole after the transaction ends, the pages they came from are rewritten, and
/// the map itself is gone; and the borrowed walk that converts bodies reads exactly what the
/// owned reads do, on damaged bytes too.
@Suite(.tags(.sanitizeAddress)) struct ReadOwnershipTests {
    private static func body(_ number: Int) -> [String: Any] {
        [
            "name": ["first": "Ann \(number)", "last": String(repeating: "x", count: number % 40)],
            "likes": ["reading", "swimming", number],
            "visits": number, "ratio": Double(number) / 8, "active": number % 2 == 0, "note": NSNull(),
        ]
    }

    @Test func documentsAndRowsOutliveRewritesAndTheClosedDatabase() async throws {
        let directory = try TemporaryDirectory()
        let database = try directory.open("owned")
        let collection = try database.defaultCollection()
        for number in 0..<50 {
            try await collection.save(document: MutableDocument(id: "doc-\(number)", data: Self.body(number)))
        }
        var documents: [Document] = []
        for number in 0..<50 {
            documents.append(try #require(try await collection.document(id: "doc-\(number)")))
        }
        let revisions = documents.map(\.revisionID)
        let rows = Array(try await database.createQuery("SELECT META().id, * FROM _ ORDER BY visits").execute())

        // Every page those reads came from is freed and written again, many times over.
        for round in 0..<20 {
            try await database.inBatch { batch in
                for number in 0..<50 {
                    try batch.save(
                        document: MutableDocument(
                            id: "doc-\(number)", data: ["round": round, "filler": String(repeating: "y", count: 300)]),
                        in: collection)
                }
            }
        }
        for number in 0..<25 { try await collection.purge(id: "doc-\(number)") }
        try await database.close()  // unmaps the file

        for (number, document) in documents.enumerated() {
            #expect(document.revisionID == revisions[number])
            #expect(document.revisionID?.hasPrefix("1-") == true)
            #expect(document.string(forKey: "name") == nil)
            #expect(document.dictionary(forKey: "name")?.string(forKey: "first") == "Ann \(number)")
            #expect(document.int(forKey: "visits") == number)
            #expect(document.array(forKey: "likes")?.int(at: 2) == number)
            #expect(try ValueConversion.strict(document.toDictionary()) == ValueConversion.strict(Self.body(number)))
        }
        #expect(rows.count == 50)
        for (number, row) in rows.enumerated() {
            #expect(row.string(forKey: "id") == "doc-\(number)")
            let stored = try #require(row.toDictionary()["_"])
            #expect(try ValueConversion.strict(stored) == ValueConversion.strict(Self.body(number)))
        }
    }

    @Test func theBorrowedWalkReadsWhatTheOwnedReadsDoOnDamagedBytes() throws {
        let body = try ValueEncoder.encode(ValueConversion.strict(Self.body(7)))
        var random = SystemRandomNumberGenerator()
        for _ in 0..<2000 {
            var damaged = body
            for _ in 0..<Int.random(in: 1...4, using: &random) {
                damaged[Int.random(in: 0..<damaged.count, using: &random)] = UInt8.random(in: 0...255, using: &random)
            }
            if Bool.random(using: &random) { damaged.removeLast(Int.random(in: 0..<damaged.count, using: &random)) }
            let encoded = EncodedValue(bytes: damaged)
            // Straight to plain values, or decoded into `Value`s first and converted after: the
            // same entries and values either way (a damaged double may read as NaN).
            let decoded = encoded.decode()
            #expect(Self.same(try ValueConversion.strict(ValueConversion.plain(encoded)), decoded))
            #expect(Self.same(try ValueConversion.strict(ValueConversion.plain(decoded)), decoded))
            if case .dictionary(let entries) = decoded { #expect(Set(encoded.keys).isSuperset(of: entries.keys)) }
        }
    }

    /// Equality with doubles compared by their bits (NaN equals NaN); also used by
    /// `DictionaryShapeTests`.
    static func same(_ lhs: Value, _ rhs: Value) -> Bool {
        switch (lhs, rhs) {
        case (.double(let a), .double(let b)): a.bitPattern == b.bitPattern
        case (.array(let a), .array(let b)): a.count == b.count && zip(a, b).allSatisfy { same($0, $1) }
        case (.dictionary(let a), .dictionary(let b)):
            a.count == b.count && a.allSatisfy { key, value in b[key].map { same(value, $0) } ?? false }
        default: lhs == rhs
        }
    }
}
