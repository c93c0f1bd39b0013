import Foundation
import Testing

@testable import Couchette

/// COLLATE on LIKE and CONTAINS, written on an operand or around the whole expression.
@Suite(.tags(.sanitizeAddress)) struct SQLPPCollationTests {
    private func withNames(_ body: (Database) async throws -> Void) async throws {
        try await withDatabase { db, _ in
            for (id, name) in [("1", "Jennifer"), ("2", "jenny"), ("3", "Jén"), ("4", "Bob"), ("5", "JENSEN")] {
                try await SQLPP.save(db, id, #"{"name":"\#(name)"}"#)
            }
            try await body(db)
        }
    }

    private func names(_ db: Database, _ condition: String) async throws -> [String] {
        try await db.createQuery("SELECT name FROM _ WHERE \(condition) ORDER BY META().id").execute()
            .allResults().compactMap { $0.string(forKey: "name") }
    }

    @Test func likeUsesTheCollation() async throws {
        try await withNames { (db: Database) async throws in
            #expect(try await names(db, "name LIKE 'jen%'") == ["jenny"])
            #expect(try await names(db, "name LIKE 'jen%' COLLATE (UNICODE NOCASE)") == ["Jennifer", "jenny", "JENSEN"])
            #expect(try await names(db, "(name LIKE 'jen%') COLLATE (UNICODE NOCASE)") == ["Jennifer", "jenny", "JENSEN"])
            #expect(try await names(db, "(name LIKE 'JEN%') COLLATE NOCASE") == ["Jennifer", "jenny", "JENSEN"])
            #expect(try await names(db, "name LIKE 'jen%' COLLATE (UNICODE NOCASE NODIAC)") == ["Jennifer", "jenny", "Jén", "JENSEN"])
            #expect(try await names(db, "(name NOT LIKE 'jen%') COLLATE (UNICODE NOCASE)") == ["Jén", "Bob"])
        }
    }

    @Test func containsUsesTheCollation() async throws {
        try await withNames { (db: Database) async throws in
            #expect(try await names(db, "CONTAINS(name, 'jén')") == [])
            #expect(try await names(db, "CONTAINS(name, 'jén') COLLATE (UNICODE NOCASE NODIAC)") == ["Jennifer", "jenny", "Jén", "JENSEN"])
            #expect(try await names(db, "CONTAINS(name, 'en') COLLATE NOCASE") == ["Jennifer", "jenny", "JENSEN"])
            #expect(try await names(db, "CONTAINS(name COLLATE (UNICODE NOCASE), 'NN')") == ["Jennifer", "jenny"])
            #expect(try await names(db, "CONTAINS(nope, 'a') COLLATE NOCASE IS MISSING") == ["Jennifer", "jenny", "Jén", "Bob", "JENSEN"])
        }
    }

    @Test func anEnclosingCollateCoversComparisons() async throws {
        try await withNames { (db: Database) async throws in
            #expect(try await names(db, "(name = 'bob') COLLATE NOCASE") == ["Bob"])
            #expect(try await names(db, "(name = 'bob' OR name = 'JENNY') COLLATE NOCASE") == ["jenny", "Bob"])
            #expect(try await names(db, "(name IN ['BOB', 'jen']) COLLATE (UNICODE NOCASE NODIAC)") == ["Jén", "Bob"])
            #expect(try await names(db, "name = 'bob'") == [])
        }
    }
}
