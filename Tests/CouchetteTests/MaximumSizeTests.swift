import Foundation
import Testing

@testable import Couchette

/// `DatabaseConfiguration.maximumSize` simulates a full disk: a database capped at a few MB fills
/// up, says so, loses nothing, and takes writes again once deletions and compaction made room.
@Suite(.tags(.concurrency, .sanitizeAddress)) struct MaximumSizeTests {
    private static let cap = 4 << 20

    private func cappedDatabase(_ directory: TemporaryDirectory) throws -> Database {
        var configuration = directory.configuration
        configuration.maximumSize = Self.cap
        return try Database(name: "capped", config: configuration)
    }

    /// A 2 KB body that differs per document (nothing to share between pages).
    private func document(_ id: String, seed: Int, size: Int = 2000) -> MutableDocument {
        var generator = ValueEncodingTests.SeededGenerator(seed: UInt64(seed))
        let text = (0..<(size / 16)).map { _ in String(generator.next() | 1 << 63, radix: 16) }.joined()
        return MutableDocument(id: id).setInt(seed, forKey: "n").setString(text, forKey: "text")
    }

    /// Saves documents from `start` on until the database is full: in batches of 25 (one commit
    /// each, to keep the test fast), then one by one up to the last that fits.
    private func fill(_ collection: Collection, from start: Int) async throws -> (saved: [Int], error: CouchetteError?) {
        var saved: [Int] = []
        var next = start
        var batchSize = 25
        while next < start + 10_000 {
            let numbers = next..<(next + batchSize)
            do {
                try await collection.database.inBatch { batch in
                    for number in numbers { try batch.save(document: document("doc-\(number)", seed: number), in: collection) }
                }
                saved += numbers
                next += batchSize
            } catch let error as CouchetteError {
                guard error.code == .full, batchSize > 1 else { return (saved, error) }
                batchSize = 1  // the batch did not fit, and wrote nothing: go on one by one
            }
        }
        return (saved, nil)
    }

    @Test func aFullDatabaseLosesNothingAndTakesWritesAgainAfterDeletionsAndCompaction() async throws {
        let directory = try TemporaryDirectory()
        let database = try cappedDatabase(directory)
        let collection = try database.defaultCollection()

        let (saved, error) = try await fill(collection, from: 0)
        let full = try #require(error, "4 MiB never filled up")
        #expect(full.code == .full)
        #expect(full.message.contains("maximum size of \(Self.cap) bytes"), "\(full.message)")
        #expect(saved.count > 500)
        let file = try #require(try FileManager.default.attributesOfItem(atPath: database.path + "data.mdb")[.size] as? NSNumber)
        #expect(file.intValue <= Self.cap)
        // Everything committed before is there, and a refused write changed nothing.
        #expect(try await collection.count == UInt64(saved.count))
        for number in saved.shuffled().prefix(200) {
            #expect(
                try await collection.document(id: "doc-\(number)")?.string(forKey: "text")
                    == document("x", seed: number).string(forKey: "text"))
        }
        #expect(try await collection.document(id: "doc-\(saved.count)") == nil)
        await expectCouchetteError(.full) { try await collection.save(document: document("again", seed: 999_999)) }

        // A full database can still be emptied: deletions use the room kept for them.
        let evens = saved.filter { $0 % 2 == 0 }
        for start in stride(from: 0, to: evens.count, by: 25) {
            let chunk = evens[start..<min(start + 25, evens.count)]
            var documents: [Document] = []
            for number in chunk { documents.append(try #require(try await collection.document(id: "doc-\(number)"))) }
            try await collection.database.inBatch { batch in
                for document in documents { try batch.delete(document: document, in: collection) }
            }
        }
        #expect(try await collection.count == UInt64(saved.count / 2))
        // The space the deletions freed takes new documents without compaction.
        let (refilled, _) = try await fill(collection, from: 100_000)
        #expect(refilled.count > 100, "\(refilled.count) documents fit after deleting \(saved.count / 2)")

        // Compaction gives the free pages back to the file system; writes fit again after it.
        for start in stride(from: 0, to: refilled.count, by: 25) {
            let chunk = refilled[start..<min(start + 25, refilled.count)]
            try await collection.database.inBatch { batch in
                for number in chunk { try batch.purge(id: "doc-\(number)", in: collection) }
            }
        }
        try await database.performMaintenance(type: .compact)
        let compacted = try #require(try FileManager.default.attributesOfItem(atPath: database.path + "data.mdb")[.size] as? NSNumber)
        #expect(compacted.intValue < file.intValue)
        try await collection.save(document: document("after-compaction", seed: 7))
        try await database.performMaintenance(type: .integrityCheck)
        try await database.close()

        let reopened = try cappedDatabase(directory)
        let again = try reopened.defaultCollection()
        #expect(try await again.count == UInt64(saved.count / 2 + 1))
        for number in saved where number % 2 == 1 {
            #expect(try await again.document(id: "doc-\(number)")?.int(forKey: "n") == number)
        }
        try await reopened.close()
    }

    @Test func aWriteThatCannotFitFailsAloneInItsGroupCommit() async throws {
        let directory = try TemporaryDirectory()
        let database = try cappedDatabase(directory)
        let collection = try database.defaultCollection()
        let results = await withTaskGroup(of: (String, CouchetteError.Code?).self) { group in
            for index in 0..<24 {
                group.addTask {
                    // One body larger than the whole database among small ones.
                    let saved =
                        index == 12
                        ? MutableDocument(id: "huge").setString(String(repeating: "x", count: 5 << 20), forKey: "text")
                        : document("small-\(index)", seed: index, size: 200)
                    let id = saved.id
                    do {
                        try await collection.save(document: saved)
                        return (id, nil)
                    } catch let error as CouchetteError {
                        return (id, error.code)
                    } catch {
                        return (id, .io)
                    }
                }
            }
            var results: [String: CouchetteError.Code?] = [:]
            for await (id, code) in group { results[id] = code }
            return results
        }
        #expect(results["huge"] == .some(.full))
        for index in 0..<24 where index != 12 {
            #expect(results["small-\(index)"] == .some(nil), "small-\(index): \(String(describing: results["small-\(index)"]))")
            #expect(try await collection.document(id: "small-\(index)")?.int(forKey: "n") == index)
        }
        #expect(try await collection.document(id: "huge") == nil)
        #expect(try await collection.count == 23)
        try await database.close()
    }

    @Test func aLimitBelowOneMebibyteIsRefused() async throws {
        let directory = try TemporaryDirectory()
        var configuration = directory.configuration
        configuration.maximumSize = 64 << 10
        await expectCouchetteError(.invalidParameter) { _ = try Database(name: "tiny", config: configuration) }
    }
}
