import Testing

@testable import Couchette

/// Queued writes from many tasks are committed in one transaction, each isolated from the others.
@Suite(.tags(.concurrency)) struct GroupCommitTests {
    @Test func queuedWritesShareOneCommitAndFailIndependently() async throws {
        try await withDatabase { database, _ in
            let collection = try database.defaultCollection()
            let spec = collection.spec
            let body = Document.emptyBody
            let writes = [
                PendingWrite([.save(spec, id: "a", body: body, base: nil, control: .lastWriteWins)]),
                PendingWrite([.purge(spec, id: "missing")]),
                PendingWrite([.save(spec, id: "b", body: body, base: nil, control: .lastWriteWins)]),
                PendingWrite(
                    [
                        .save(spec, id: "c", body: body, base: nil, control: .lastWriteWins),
                        .purge(spec, id: "missing-too"),
                    ], isAtomic: true),
            ]
            let observed = Observed()
            let token = database.observation.observers.add { observed.append($0) }
            defer { database.observation.observers.remove(token) }
            for write in writes { database.core.writeQueue.append(write) }
            await database.commitQueuedWrites()

            #expect(observed.all.count == 1)
            #expect(observed.ids == ["a", "b"])
            #expect(try writes[0].outcomes().count == 1)
            #expect(throws: CouchetteError.self) { try writes[1].outcomes() }
            #expect(try writes[2].outcomes().count == 1)
            #expect(throws: CouchetteError.self) { try writes[3].outcomes() }
            #expect(try await collection.document(id: "c") == nil)
            #expect(try await collection.count == 2)
        }
    }
}
