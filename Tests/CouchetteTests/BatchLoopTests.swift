import Testing

@testable import Couchette

/// `Database.inBatches`: each batch commits as its own transaction while the body fills the next;
/// when it returns everything is written, a failure keeps whole batches before it, and documents
/// saved in one batch carry their new revisions into the next.
@Suite(.tags(.concurrency)) struct BatchLoopTests {
    private struct Stop: Error {}

    private static func json(_ batch: Int, _ number: Int) -> String {
        #"{"batch":\#(batch),"n":\#(number),"tags":["a",{"k":null}]}"#
    }

    @Test func everyBatchIsCommittedWhenItReturns() async throws {
        try await withDatabase { database, _ in
            let collection = try database.defaultCollection()
            let sizes = [300, 300, 1, 300, 300, 300, 120]
            var calls = 0
            try await database.inBatches { batch in
                let index = calls
                calls += 1
                for number in 0..<sizes[index] {
                    try batch.save(id: "b\(index)-\(number)", json: Self.json(index, number), in: collection)
                }
                return calls < sizes.count
            }
            #expect(calls == sizes.count)
            #expect(try await collection.count == UInt64(sizes.reduce(0, +)))
            for (index, size) in sizes.enumerated() {
                for number in [0, size - 1] {
                    let document = try #require(try await collection.document(id: "b\(index)-\(number)"))
                    #expect(document.toJSON() == #"{"batch":\#(index),"n":\#(number),"tags":["a",{"k":null}]}"#)
                    #expect(document.revisionID?.hasPrefix("1-") == true)
                }
            }
        }
    }

    @Test func aFailingBodyKeepsTheBatchesBeforeIt() async throws {
        try await withDatabase { database, _ in
            let collection = try database.defaultCollection()
            var calls = 0
            await #expect(throws: Stop.self) {
                try await database.inBatches { batch in
                    let index = calls
                    calls += 1
                    for number in 0..<200 { try batch.save(id: "b\(index)-\(number)", json: Self.json(index, number), in: collection) }
                    if index == 3 { throw Stop() }
                    return true
                }
            }
            #expect(calls == 4)
            #expect(try await collection.count == 600)
            #expect(try await collection.document(id: "b2-199") != nil)
            #expect(try await collection.document(id: "b3-0") == nil)
        }
    }

    @Test func aFailedCommitStopsTheLoopAndWritesNothingAfterIt() async throws {
        try await withDatabase { database, _ in
            let collection = try database.defaultCollection()
            try await collection.save(document: MutableDocument(id: "taken").setInt(1, forKey: "n"))
            var calls = 0
            let error = await #expect(throws: CouchetteError.self) {
                try await database.inBatches { batch in
                    let index = calls
                    calls += 1
                    for number in 0..<100 { try batch.save(id: "b\(index)-\(number)", json: Self.json(index, number), in: collection) }
                    if index == 1 { try batch.save(id: "taken", json: #"{"n":2}"#, in: collection, concurrencyControl: .failOnConflict) }
                    return index < 5
                }
            }
            #expect(error?.code == .conflict)
            // The third body ran while the second batch committed; nothing after that one is written.
            #expect(calls == 3)
            #expect(try await collection.count == 101)
            #expect(try await collection.document(id: "b0-99") != nil)
            #expect(try await collection.document(id: "b1-0") == nil)
            #expect(try await collection.document(id: "b2-0") == nil)
            #expect(try await collection.document(id: "taken")?.int(forKey: "n") == 1)
        }
    }

    @Test func documentsSavedInOneBatchCarryTheirRevisionIntoTheNext() async throws {
        try await withDatabase { database, _ in
            let collection = try database.defaultCollection()
            let document = MutableDocument(id: "kept").setInt(0, forKey: "n")
            var calls = 0
            try await database.inBatches { batch in
                calls += 1
                document.setInt(calls, forKey: "n")
                // Under .failOnConflict a save without the revision of the one before would conflict.
                try batch.save(document: document, in: collection, concurrencyControl: .failOnConflict)
                try batch.save(id: "json-\(calls)", json: #"{"n":\#(calls)}"#, in: collection)
                return calls < 3
            }
            #expect(document.revisionID?.hasPrefix("3-") == true)
            let stored = try #require(try await collection.document(id: "kept"))
            #expect(stored.int(forKey: "n") == 3)
            #expect(stored.revisionID == document.revisionID)
            #expect(try await collection.count == 4)
        }
    }
}
