import Foundation
import Testing

@testable import Couchette

/// A live query that keeps its matching documents (``MatchedDocuments``) re-reads only the
/// documents commits changed; its results must stay exactly those of a full re-run.
@Suite(.tags(.concurrency)) struct IncrementalLiveQueryTests {
    private static let queries = [
        "SELECT meta().id AS id, n FROM _ WHERE kind = 'a'",
        "SELECT COUNT(*) AS c, SUM(n) AS s, MIN(meta().id) AS first FROM _ WHERE kind = 'a'",
        "SELECT kind, COUNT(*) AS c, MAX(n) AS m FROM _ WHERE n >= 3 GROUP BY kind HAVING COUNT(*) > 1 ORDER BY kind",
        "SELECT DISTINCT kind FROM _ WHERE n < 7 ORDER BY kind DESC",
        "SELECT meta().id AS id, kind FROM _ WHERE n > 2 ORDER BY kind, n DESC",
        "SELECT meta().id, * FROM _",
        "SELECT meta().id AS id, meta().deleted AS gone FROM _ WHERE meta().deleted OR n = 4",
    ]

    /// One random edit of one of 40 documents: a save, a delete, a purge, or a save of a document
    /// that expires at once (it reads as absent while its record stays until purged). Returns the
    /// document's id and whether it was purged.
    @discardableResult
    private func edit(_ collection: Collection, _ random: inout ValueEncodingTests.SeededGenerator) async throws -> (String, Bool) {
        let id = "doc-\(Int.random(in: 0..<40, using: &random))"
        switch Int.random(in: 0..<10, using: &random) {
        case 0:
            if let document = try await collection.document(id: id) { try await collection.delete(document: document) }
        case 1:
            if try await collection.document(id: id) != nil {
                try await collection.purge(id: id)
                return (id, true)
            }
        case 2:
            try await collection.save(document: MutableDocument(id: id).setString("a", forKey: "kind").setInt(5, forKey: "n"))
            try await collection.setDocumentExpiration(id: id, expiration: Date(timeIntervalSinceNow: -1))
        default:
            let kind = ["a", "b", "c"][Int.random(in: 0..<3, using: &random)]
            try await collection.save(
                document: MutableDocument(id: id).setString(kind, forKey: "kind").setInt(
                    Int.random(in: 0..<10, using: &random), forKey: "n"))
        }
        return (id, false)
    }

    @Test(arguments: [false, true]) func incrementalResultsEqualFullRunsOverRandomEdits(indexed: Bool) async throws {
        try await withDatabase { database, _ in
            let collection = try database.defaultCollection()
            if indexed {
                try await collection.createIndex(withName: "by-kind", config: ValueIndexConfiguration(["kind"]))
                try await collection.createIndex(withName: "by-n", config: ValueIndexConfiguration(["n"]))
            }
            var random = ValueEncodingTests.SeededGenerator(seed: indexed ? 7 : 3)
            for _ in 0..<30 { try await edit(collection, &random) }
            var kept = 0
            for text in Self.queries {
                let query = try database.createQuery(text)
                var (last, _, documents) = try query.executeTrackingMatches(parameters: nil)
                guard documents != nil else { continue }
                kept += 1
                for step in 0..<40 {
                    let (id, purged) = try await edit(collection, &random)
                    // Every third step names nothing: the changes must come from the sequences (a
                    // purge leaves none there; its commit observer always names it).
                    let changed: Set<String> = step % 3 == 0 && !purged ? [] : [id]
                    let (full, _, fresh) = try query.executeTrackingMatches(parameters: nil)
                    let previous = try #require(documents)
                    switch try query.executeIncrementally(parameters: nil, previous: previous, changed: changed) {
                    case .unchanged(let next):
                        documents = next
                        #expect(last.hasSameRows(as: full), "\(text), step \(step): unchanged, yet a full run differs")
                    case .evaluated(let results, let next):
                        documents = next
                        last = results
                        #expect(
                            results.hasSameRows(as: full),
                            "\(text), step \(step): \(results.allResults().map { $0.toDictionary() }) vs \(full.allResults().map { $0.toDictionary() })"
                        )
                    case .tooMany:
                        Issue.record("\(text), step \(step): 40 documents are not too many")
                        (last, documents) = (full, fresh)
                    }
                }
            }
            #expect(kept >= 5, "most of these queries keep their documents")
        }
    }

    /// A kept document that is given an expiration afterwards and then purged by the sweeper
    /// leaves no sequence entry (setting an expiration makes none, the purge removes the
    /// document's), and its kept copy does not know it expires: the purge counter must make the
    /// re-run read the kept documents again. The random edits above met this whenever the
    /// sweeper purged before their re-run (a document saved and given an expiration at once).
    @Test func anExpirationSetAfterKeepingThenPurgedIsNotShown() async throws {
        try await withDatabase { database, _ in
            let collection = try database.defaultCollection()
            for id in ["a", "b"] { try await collection.save(document: MutableDocument(id: id).setString("a", forKey: "kind")) }
            let query = try database.createQuery("SELECT meta().id AS id FROM _ WHERE kind = 'a'")
            let kept = try #require(try query.executeTrackingMatches(parameters: nil).documents)
            #expect(kept.count == 2)
            try await collection.setDocumentExpiration(id: "a", expiration: Date(timeIntervalSinceNow: -1))
            _ = try await database.purgeExpiredDocuments()  // unless the sweeper did first
            #expect(try database.reader.read { try $0.record(collection.spec, "a") } == nil, "purged")
            let full = try query.executeTrackingMatches(parameters: nil).results
            #expect(full.allResults().map { $0.string(forKey: "id") } == ["b"])
            let outcome = try query.executeIncrementally(parameters: nil, previous: kept, changed: [])
            if case .evaluated(let results, let documents) = outcome {
                #expect(results.hasSameRows(as: full))
                #expect(documents.count == 1 && !documents.contains("a"))
            } else {
                Issue.record("the purged document is still shown: \(outcome)")
            }
        }
    }

    @Test func liveQueriesDeliverTheResultsOfAFullRunAfterEachCommit() async throws {
        try await withDatabase { database, _ in
            let activity = LiveQueryActivityCounter.attached(to: database)
            let collection = try database.defaultCollection()
            try await collection.createIndex(withName: "by-kind", config: ValueIndexConfiguration(["kind"]))
            let query = try database.createQuery(
                "SELECT kind, COUNT(*) AS c, SUM(n) AS s FROM _ WHERE kind IN ['a', 'b'] GROUP BY kind ORDER BY kind")
            let changes = query.changes()
            let latest = Locked<ResultSet?>(nil)
            let consumer = Task {
                for await change in changes { latest.withLock { $0 = change.results } }
            }
            defer { consumer.cancel() }
            var random = ValueEncodingTests.SeededGenerator(seed: 11)
            for _ in 0..<40 {
                try await edit(collection, &random)
                let full = try query.executeTrackingMatches(parameters: nil).results
                #expect(await eventually { latest.withLock { $0?.hasSameRows(as: full) ?? false } })
            }
            #expect(activity.incrementalEvaluations > 0, "re-runs read only the changed documents")
        }
    }

    /// A purge committed by another instance is in the file before this instance's monitor names
    /// it; a re-run that a later own commit starts reads a snapshot with both. Its results must
    /// be that snapshot's: never the later save beside the purged document.
    @Test func aPurgeNotYetNamedNeverShowsBesideLaterChanges() async throws {
        try await withDatabase("purged") { database, directory in
            let other = try directory.open("purged")
            let collection = try database.defaultCollection()
            let otherCollection = try other.defaultCollection()
            for number in 0..<10 {
                try await collection.save(document: MutableDocument(id: "old-\(number)").setString("a", forKey: "kind"))
            }
            let changes = try database.createQuery("SELECT meta().id AS id FROM _ WHERE kind = 'a'").changes()
            let events = Locked<[Set<String>]>([])
            let consumer = Task {
                for await change in changes {
                    let ids = Set((change.results?.allResults() ?? []).map { $0.string(forKey: "id") ?? "?" })
                    events.withLock { $0.append(ids) }
                }
            }
            defer { consumer.cancel() }
            #expect(await eventually { events.withLock { $0.last?.count == 10 } })
            for number in 0..<10 {
                try await otherCollection.purge(id: "old-\(number)")
                try await collection.save(document: MutableDocument(id: "new-\(number)").setString("a", forKey: "kind"))
                #expect(
                    await eventually {
                        events.withLock { $0.last == Set((number + 1..<10).map { "old-\($0)" } + (0...number).map { "new-\($0)" }) }
                    })
            }
            for ids in events.withLock({ $0 }) {
                for number in 0..<10 where ids.contains("new-\(number)") {
                    #expect(!ids.contains("old-\(number)"), "\(ids.sorted()): old-\(number) was purged before new-\(number) was saved")
                }
            }
            try await other.close()
        }
    }

    @Test func aDocumentThatExpiresLeavesTheKeptDocuments() async throws {
        let clock = TestClock()
        let directory = try TemporaryDirectory()
        let database = try directory.open(clock: clock)
        do {
            let collection = try database.defaultCollection()
            try await collection.save(document: MutableDocument(id: "stays").setString("a", forKey: "kind"))
            try await collection.save(document: MutableDocument(id: "expires").setString("a", forKey: "kind"))
            let query = try database.createQuery("SELECT COUNT(*) AS c FROM _ WHERE kind = 'a'")
            try await collection.setDocumentExpiration(id: "expires", expiration: clock.date.addingTimeInterval(3))
            let (first, _, kept) = try query.executeTrackingMatches(parameters: nil)
            #expect(first.allResults().first?.int(forKey: "c") == 2)
            #expect(kept?.contains("expires") == true)
            clock.advance(byMilliseconds: 3_000)  // "expires" is hidden from this millisecond on
            try await collection.save(document: MutableDocument(id: "new").setString("a", forKey: "kind"))
            let outcome = try query.executeIncrementally(parameters: nil, previous: try #require(kept), changed: ["new"])
            if case .evaluated(let results, _) = outcome {
                #expect(results.allResults().first?.int(forKey: "c") == 2, "stays and new; expires has expired")
            } else {
                Issue.record("a matching save changes the results")
            }
            try await database.close()
        } catch {
            try? await database.close()
            throw error
        }
    }
}
