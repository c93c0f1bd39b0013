import Foundation
import Testing

@testable import Couchette

/// The writer reads and rewrites records, revision histories and sequence entries through cursors
/// kept for the whole transaction: batches of updates in any order, mixed with deletes, purges,
/// new documents and documents written twice, must leave every table consistent.
@Suite struct BatchUpdateCursorTests {
    @Test func mixedBatchesInAnyOrderKeepEveryTableConsistent() async throws {
        try await withDatabase { database, _ in
            let collection = try database.defaultCollection()
            let ids = (0..<1_200).map { String(format: "doc-%05d", $0) }
            try await database.inBatch { batch in
                for (index, id) in ids.enumerated() {
                    try batch.save(document: MutableDocument(id: id).setInt(index, forKey: "n").setInt(0, forKey: "visits"), in: collection)
                }
            }
            var random = ValueEncodingTests.SeededGenerator(seed: 3)
            var expected: [String: Int] = Dictionary(uniqueKeysWithValues: ids.map { ($0, 0) })
            var deleted: Set<String> = []
            for round in 0..<3 {
                // Key order in the first round, shuffled after.
                let order = round == 0 ? ids : ids.shuffled(using: &random)
                var edits: [MutableDocument] = []
                for id in order.prefix(700) where !deleted.contains(id) {
                    guard let document = try await collection.document(id: id) else { continue }
                    edits.append(document.toMutable().setInt(document.int(forKey: "visits") + 1, forKey: "visits"))
                }
                let doomed = order.suffix(30).filter { !deleted.contains($0) }
                let purged = order.dropLast(30).suffix(10).filter { !deleted.contains($0) }
                var tombstoned: [Document] = []
                for id in doomed {
                    if let document = try await collection.document(id: id) { tombstoned.append(document) }
                }
                try await database.inBatch { batch in
                    for edit in edits {
                        try batch.save(document: edit, in: collection)
                        if edit.int(forKey: "visits") % 5 == 0 {
                            try batch.save(document: edit.setInt(edit.int(forKey: "visits") + 1, forKey: "visits"), in: collection)
                        }
                    }
                    for document in tombstoned { try batch.delete(document: document, in: collection) }
                    for id in purged { try batch.purge(id: id, in: collection) }
                    try batch.save(document: MutableDocument(id: "new-\(round)").setInt(round, forKey: "visits"), in: collection)
                }
                for edit in edits { expected[edit.id] = edit.int(forKey: "visits") }
                for id in doomed + purged {
                    deleted.insert(id)
                    expected[id] = nil
                }
                expected["new-\(round)"] = round
                try await database.performMaintenance(type: .integrityCheck)
            }
            #expect(try await collection.count == UInt64(expected.count))
            for (id, visits) in expected {
                let document = try #require(try await collection.document(id: id), "\(id)")
                #expect(document.int(forKey: "visits") == visits, "\(id)")
            }
            for id in deleted { #expect(try await collection.document(id: id) == nil) }
        }
    }
}
