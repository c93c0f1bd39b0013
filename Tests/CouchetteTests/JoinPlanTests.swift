import Foundation
import Testing

@testable import Couchette

/// The three ways a JOIN on an equality runs — an index nested-loop join (an index on the joined
/// property exists), a hash join (none does), and the plain nested loop (an ON clause with no
/// equality to use) — give identical rows in identical order over generated documents, and
/// `explain()` names the one each query uses. `COUCHETTE_STRESS=1` runs many more queries.
@Suite(.tags(.sanitizeAddress)) struct JoinPlanTests {
    typealias Generator = ValueEncodingTests.SeededGenerator

    /// One generated query in its three forms (the nested-loop form hides the equality in an OR).
    struct Forms {
        var equality: String
        var nestedLoop: String
    }

    static func forms(_ random: inout Generator) -> Forms {
        // Joined fields hold every type (numbers as int/double twins, long strings beyond an
        // index key, containers, null, MISSING).
        let inner = ["a", "s", "b"][Int.random(in: 0..<3, using: &random)]
        let outer = ["a", "s", "b"][Int.random(in: 0..<3, using: &random)]
        let kind = Int.random(in: 0..<3, using: &random) == 0 ? "LEFT JOIN" : "JOIN"
        // The equality written either way round, sometimes with more conditions beside it.
        let equality = Bool.random(using: &random) ? "r.\(inner) = l.\(outer)" : "l.\(outer) = r.\(inner)"
        var extra = ""
        switch Int.random(in: 0..<4, using: &random) {
        case 0: extra = " AND r.b < \(Int.random(in: 0..<4, using: &random))"
        case 1: extra = " AND META(r).id != META(l).id"
        default: break
        }
        var tail = ""
        switch Int.random(in: 0..<4, using: &random) {
        case 0: tail = " WHERE l.b = \(Int.random(in: 0..<4, using: &random))"
        case 1: tail = " ORDER BY r.s, META(r).id DESC LIMIT \(Int.random(in: 1...15, using: &random))"
        default: break
        }
        let select = "SELECT META(l).id AS lid, META(r).id AS rid, r.\(inner) AS v FROM docs AS l \(kind) docs AS r"
        return Forms(
            equality: "\(select) ON \(equality)\(extra)\(tail)",
            nestedLoop: "\(select) ON ((\(equality)) OR FALSE)\(extra)\(tail)")
    }

    @Test func indexHashAndNestedLoopJoinsGiveTheSameRows() async throws {
        let stress = IndexEquivalenceTests.stress
        let directory = try TemporaryDirectory()
        let indexed = try directory.open("indexed"), plain = try directory.open("plain")
        var random = Generator(seed: 0x101_4E)
        // The nested-loop forms cost documents² a query, and CI runs the stress count under
        // AddressSanitizer too: 3,000 queries over 300 documents did not finish in 15 minutes.
        let documentCount = stress ? 150 : 60
        let queryCount = stress ? 600 : 120
        let indexedDocs = try await indexed.createCollection(name: "docs")
        let plainDocs = try await plain.createCollection(name: "docs")
        var documents = (0..<documentCount).map { IndexEquivalenceTests.document($0, &random) }
        try await indexed.inBatch { batch in for doc in documents[..<(documentCount / 2)] { try batch.save(document: doc, in: indexedDocs) }
        }
        for field in ["a", "s", "b"] {
            try await indexedDocs.createIndex(withName: "by-\(field)", config: ValueIndexConfiguration([field]))
        }
        try await indexed.inBatch { batch in for doc in documents[(documentCount / 2)...] { try batch.save(document: doc, in: indexedDocs) }
        }
        for _ in 0..<(documentCount / 5) {  // updates and deletions keep the index current
            let number = Int.random(in: 0..<documentCount, using: &random)
            if Bool.random(using: &random) {
                documents[number] = IndexEquivalenceTests.document(number, &random)
                try await indexedDocs.save(document: documents[number])
            } else if let doc = try await indexedDocs.document(id: documents[number].id) {
                try await indexedDocs.delete(document: doc)
                documents[number] = MutableDocument(id: "deleted")
            }
        }
        try await plain.inBatch { batch in
            for doc in documents where doc.id != "deleted" { try batch.save(document: doc.toMutable(), in: plainDocs) }
        }

        var failures = 0
        for _ in 0..<queryCount {
            let forms = Self.forms(&random)
            let byIndex = try indexed.createQuery(forms.equality), byHash = try plain.createQuery(forms.equality)
            let byLoop = try plain.createQuery(forms.nestedLoop)
            let explained = (try await byIndex.explain(), try await byHash.explain(), try await byLoop.explain())
            #expect(explained.0.contains("(index nested loop USING by-"), "\(explained.0)")
            #expect(explained.1.contains("(hash)"), "\(explained.1)")
            #expect(explained.2.contains("(nested loop)"), "\(explained.2)")
            let expected = try await byLoop.execute().map { $0.toJSON() }
            let rows = (try await byIndex.execute().map { $0.toJSON() }, try await byHash.execute().map { $0.toJSON() })
            if rows.0 != expected || rows.1 != expected {
                failures += 1
                if failures <= 5 {
                    Issue.record("\(forms.equality)\nindex: \(rows.0)\nhash: \(rows.1)\nnested loop: \(expected)")
                }
            }
            await Task.yield()
        }
        #expect(failures == 0)
        try await indexed.close()
        try await plain.close()
    }

    /// The index nested-loop join reads only the joined documents whose key matches: a damaged
    /// record that no outer row matches is never decoded (the nested loop and the hash join,
    /// which read the whole joined collection, fail on it).
    @Test func anIndexJoinReadsOnlyMatchingDocuments() async throws {
        try await withDatabase { database, _ in
            let people = try await database.createCollection(name: "people")
            let orders = try await database.createCollection(name: "orders")
            try await database.inBatch { batch in
                for number in 0..<20 {
                    try batch.save(document: MutableDocument(id: "p\(number)", data: ["email": "p\(number)@x", "n": number]), in: people)
                }
                for number in 0..<5 {
                    try batch.save(document: MutableDocument(id: "o\(number)", data: ["buyer": "p\(number * 3)@x"]), in: orders)
                }
            }
            let sql = "SELECT META(o).id AS o, p.n FROM orders AS o JOIN people AS p ON p.email = o.buyer ORDER BY META(o).id"
            let expected = try await queryJSON(database, sql)
            #expect(expected.count == 5)
            #expect(try await database.createQuery(sql).explain().contains("(hash)"))
            try await people.createIndex(withName: "by-email", config: ValueIndexConfiguration(["email"]))
            #expect(try await database.createQuery(sql).explain().contains("(index nested loop USING by-email)"))
            // Damage a record no order refers to: only a plan that reads it can notice.
            let tables = database.core.environment.tables
            try database.core.environment.write { txn in
                try txn.put(tables.documents, key: StoreLayout.documentKey(people.spec.number, "p1"), value: [0xFF])
            }
            #expect(try await queryJSON(database, sql) == expected)
            await expectCouchetteError(.corruption) {
                _ = try await queryJSON(database, "SELECT META(o).id FROM orders AS o JOIN people AS p ON (p.email = o.buyer) OR FALSE")
            }
        }
    }
}
