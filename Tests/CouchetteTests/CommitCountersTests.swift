import Foundation
import Testing

@testable import Couchette

/// One commit reads and rewrites each collection's counters once (``WriteContext``): sequences,
/// live counts and purge counts stay right when its writes go from one collection to another and
/// back, and the summary the cross-process monitor reads names one range per collection.
@Suite struct CommitCountersTests {
    @Test func aBatchAlternatingBetweenCollectionsKeepsEachCollectionsCounters() async throws {
        let directory = try TemporaryDirectory()
        let database = try directory.open()
        let first = try database.defaultCollection()
        let second = try await database.createCollection(name: "second")
        let body = Document.emptyBody
        // Two documents in the first collection, to purge and to delete below.
        for id in ["gone", "deleted"] {
            _ = try await database.perform(PendingWrite([.save(first.spec, id: id, body: body, base: nil, control: .lastWriteWins)]))
        }
        let store = database.core.store
        let environment = database.core.environment
        let before = try database.core.read { txn in
            (try store.lastSequence(txn, first.spec), try store.liveCount(txn, first.spec), try store.purgeCount(txn, first.spec))
        }
        #expect(before == (2, 2, 0))

        let summary = try environment.write { txn in
            let collections = try database.core.catalog.current(in: txn, store: store)
            let context = WriteContext(txn: txn, tables: environment.tables, now: 0, collections: collections, recordsIDs: false)
            for i in 0..<3 {
                for spec in [first.spec, second.spec] {
                    _ = try store.apply(.save(spec, id: "d\(i)", body: body, base: nil, control: .lastWriteWins), in: context)
                }
            }
            _ = try store.apply(.purge(first.spec, id: "gone"), in: context)
            _ = try store.apply(.delete(first.spec, id: "deleted", base: nil, control: .lastWriteWins), in: context)
            try context.flush()
            return context.summary
        }

        let counters = try database.core.read { txn in
            try [first.spec, second.spec].map { spec in
                [try store.lastSequence(txn, spec), try store.liveCount(txn, spec), try store.purgeCount(txn, spec)]
            }
        }
        // First: 2 + 3 saves + 1 deletion (the purge takes no sequence), 3 live, 1 purge. Second: 3 saves.
        #expect(counters == [[6, 3, 1], [3, 3, 0]])
        #expect(summary.ownWrites.sequences[first.spec.number] == [3...6])
        #expect(summary.ownWrites.sequences[second.spec.number] == [1...3])
        #expect(summary.ownWrites.countDeltas[first.spec.number] == 1)
        #expect(summary.ownWrites.countDeltas[second.spec.number] == 3)
        #expect(summary.ownWrites.purges[first.spec.number] == 1)

        // The next commit continues every counter where this one left it.
        let next = PendingWrite([.save(second.spec, id: "next", body: body, base: nil, control: .lastWriteWins)])
        let outcomes = try await database.perform(next)
        guard case .saved(_, let sequence)? = outcomes.first else { throw CouchetteError(.io, "not saved: \(outcomes)") }
        #expect(sequence == 4)
        #expect(try await second.count == 4)
        try await database.close()
    }

    @Test func aCommitWithAnIndexKeepsItCurrentForEveryWrite() async throws {
        try await withDatabase { database, _ in
            let collection = try database.defaultCollection()
            try await collection.createIndex(withName: "byN", config: ValueIndexConfiguration(["n"]))
            // Several writes in one commit: the context asks once whether indexes exist, for all.
            try await database.inBatch { batch in
                for i in 0..<5 { try batch.save(document: MutableDocument(id: "d\(i)").setInt(i, forKey: "n"), in: collection) }
            }
            try await database.inBatch { batch in
                try batch.save(document: MutableDocument(id: "d4").setInt(1, forKey: "n"), in: collection)
                try batch.save(document: MutableDocument(id: "d5").setInt(9, forKey: "n"), in: collection)
            }
            let query = try database.createQuery("SELECT meta().id AS id FROM _ WHERE n >= 3 ORDER BY n")
            #expect(try await query.explain().contains("byN"))
            #expect(try await query.execute().map { $0.string(forKey: "id") ?? "" } == ["d3", "d5"])
        }
    }
}
