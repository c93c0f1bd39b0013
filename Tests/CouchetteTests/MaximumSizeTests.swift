import Foundation
import Testing
@testable import Couchette

/// `DatabaseConfiguration.maximumSize` simulates a full disk: a database capped at a few MB fills
/// up, says so, loses nothing, and takes writes again once deletions and compaction made room.
@Suite struct MaximumSizeTests {
    private static let cap = 4 << 20

    private func cappedDatabase(_ directory: TemporaryDirectory) throws -> Database {
        var configuration = directory.configuration
        configuration.maximumSize = Self.cap
        return try Database(name: "capped", config: configuration)
    }

    /// A 2 KB body that differs per document (nothing to share between pages).
    private func document(_ id: String, seed: Int, size: Int = 2000) -> MutableDocument {
        var generator = ValueEncodingTests.SeededGenerator(seed: UInt64(seed))
        let text = String((0..<size).map { _ in Character(UnicodeScalar(UInt8.random(in: 97...122, using: &generator))) })
        return MutableDocument(id: id).setInt(seed, forKey: "n").setString(text, forKey: "text")
    }

    private func fill(_ collection: Collection, from start: Int) async throws -> (saved: [Int], error: CouchetteError?) {
        var saved: [Int] = []
        for number in start..<(start + 10_000) {
            do {
                try await collection.save(document: document("doc-\(number)", seed: number))
                saved.append(number)
            } catch let error as CouchetteError {
                return (saved, error)
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
            #expect(try await collection.document(id: "doc-\(number)")?.string(forKey: "text")
                    == document("x", seed: number).string(forKey: "text"))
        }
        #expect(try await collection.document(id: "doc-\(saved.count)") == nil)
        await expectCouchetteError(.full) { try await collection.save(document: document("again", seed: 999_999)) }

        // A full database can still be emptied: deletions use the room kept for them.
        for number in saved where number % 2 == 0 {
            try await collection.delete(document: try #require(try await collection.document(id: "doc-\(number)")))
        }
        #expect(try await collection.count == UInt64(saved.count / 2))
        // The space the deletions freed takes new documents without compaction.
        let (refilled, _) = try await fill(collection, from: 100_000)
        #expect(refilled.count > 100, "\(refilled.count) documents fit after deleting \(saved.count / 2)")

        // Compaction gives the free pages back to the file system; writes fit again after it.
        for number in refilled { try await collection.purge(id: "doc-\(number)") }
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
                    let saved = index == 12
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
