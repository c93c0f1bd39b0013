import Testing

@testable import Couchette

/// A batch of updates takes every shortcut of the update path: bodies patched in place, revisions
/// hashed while the batch fills (several chunks of them), revision chains extended without being
/// decoded, runs of JSON documents between the updates. What it stores must be, byte for byte,
/// what the long way stores: each document encoded whole and saved on its own.
@Suite struct UpdateLongWayTests {
    /// The stored record and revision tree of every id, as raw bytes.
    private func storedBytes(_ ids: [String], in collection: Couchette.Collection) throws -> [[UInt8]?] {
        let tables = collection.database.core.environment.tables
        return try collection.database.core.environment.read { txn in
            try ids.flatMap { id in
                let key = StoreLayout.documentKey(collection.spec.number, id)
                return [try txn.getBytes(tables.documents, key: key), try txn.getBytes(tables.revisions, key: key)]
            }
        }
    }

    @Test func batchedUpdatesStoreWhatWholeSingleSavesStore() async throws {
        try await withDatabase { database, _ in
            let short = try database.defaultCollection()
            let long = try await database.createCollection(name: "long")
            // More updates than one digest chunk holds, so that several chunks are hashed.
            let ids = (0..<(UpdateRevisions.chunkCount * 2 + 7)).map { "u\($0)" }
            for collection in [short, long] {
                try await database.inBatch { batch in
                    for (index, id) in ids.enumerated() {
                        try batch.save(
                            document: MutableDocument(id: id).setInt(index, forKey: "visits").setString("n\(index)", forKey: "name"),
                            in: collection)
                    }
                }
            }
            for round in 1...3 {
                // The short way: read, increment in place, one batch, with JSON runs in between.
                var edits: [MutableDocument] = []
                for id in ids {
                    let document = try #require(try await short.document(id: id))
                    edits.append(document.toMutable().setInt(document.int(forKey: "visits") + 1, forKey: "visits"))
                }
                try await database.inBatch { batch in
                    for (index, edit) in edits.enumerated() {
                        try batch.save(document: edit, in: short)
                        if index % 50 == 0 { _ = try batch.save(id: "json-\(round)-\(index)", json: #"{"k":1}"#, in: short) }
                    }
                }
                // The long way: every property set anew (the body encoded whole), saved one by one.
                for id in ids {
                    let document = try #require(try await long.document(id: id))
                    let edit = document.toMutable()
                    edit.setData(["visits": document.int(forKey: "visits") + 1, "name": document.string(forKey: "name") ?? ""])
                    try await long.save(document: edit)
                    if let index = ids.firstIndex(of: id), index % 50 == 0 {
                        try await long.save(document: MutableDocument(id: "json-\(round)-\(index)").setInt(1, forKey: "k"))
                    }
                }
                for (edit, id) in zip(edits, ids) {
                    let stored = try #require(try await long.document(id: id))
                    #expect(edit.revisionID == stored.revisionID, "round \(round), \(id)")
                    #expect(edit.revisionID?.hasPrefix("\(round + 1)-") == true)
                }
                #expect(try storedBytes(ids, in: short) == storedBytes(ids, in: long), "round \(round)")
            }
            try await database.performMaintenance(type: .integrityCheck)
        }
    }
}
