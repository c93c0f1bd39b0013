import Foundation
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
            await database.submit(writes)

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

    /// A write committed alone is applied without a nested transaction: failing halfway, it must
    /// still leave nothing behind, and the next write commits normally.
    @Test func aLoneWriteThatFailsHalfwayLeavesNothing() async throws {
        try await withDatabase { database, _ in
            let collection = try database.defaultCollection()
            let spec = collection.spec
            let body = Document.emptyBody
            let failing = PendingWrite(
                [
                    .save(spec, id: "first", body: body, base: nil, control: .lastWriteWins),
                    .purge(spec, id: "missing"),
                ], isAtomic: true)
            await database.submit([failing])
            #expect(throws: CouchetteError.self) { try failing.outcomes() }
            #expect(try await collection.document(id: "first") == nil)
            #expect(try await collection.count == 0)
            try await collection.save(document: MutableDocument(id: "second"))
            #expect(try await collection.document(id: "second")?.sequence == 1)
        }
    }
}

/// How the writer fills its groups and hands results back, and what a commit's summary costs.
@Suite(.tags(.concurrency)) struct GroupCommitFillingTests {
    private static func save(_ spec: CollectionSpec, _ id: String) -> PendingWrite {
        PendingWrite([.save(spec, id: id, body: Document.emptyBody, base: nil, control: .lastWriteWins)])
    }

    private func save(_ spec: CollectionSpec, _ id: String) -> PendingWrite { Self.save(spec, id) }

    @Test func theWriterWaitsForStragglersUntilEnoughAreQueued() async throws {
        try await withDatabase { database, _ in
            let spec = try database.defaultCollection().spec
            let queue = WriteQueue()
            // The appender is a thread of its own: `take` below blocks this test's pool thread,
            // and on a loaded 2-core machine an appender task could wait behind it (and behind
            // every other test) for the whole 30 s limit, starving the suite meanwhile.
            let appended = AsyncStream<Void>.makeStream()
            Thread.detachNewThread {
                for i in 0..<3 {
                    usleep(5_000)
                    _ = queue.append(Self.save(spec, "late-\(i)"), mayCommitHere: false)
                }
                appended.continuation.finish()
            }
            // Woken by the third append, long before the limit.
            let started = ContinuousClock.now
            var gathered: [PendingWrite] = []
            while gathered.count < 3 && ContinuousClock.now - started < .seconds(30) {
                gathered += queue.take(atLeast: 3 - gathered.count, waitingAtMost: .seconds(30))
            }
            #expect(gathered.count == 3)
            for await _ in appended.stream {}
            // Nobody arriving: the wait ends at its limit with what is there.
            #expect(queue.take(atLeast: 1, waitingAtMost: .milliseconds(1)).isEmpty)
        }
    }

    @Test func pacingExpectsTheWritersOfTheLastCommitBack() {
        var pacing = GroupCommitPacing()
        #expect(pacing.expectedWriters == 1)
        pacing.committed(8, arrivedMeanwhile: 0, took: .milliseconds(1))
        #expect(pacing.expectedWriters == 8)
        #expect(pacing.wait == .milliseconds(1))
        pacing.committed(3, arrivedMeanwhile: 5, took: .seconds(1))
        #expect(pacing.expectedWriters == 6)
        #expect(pacing.wait == GroupCommitPacing.defaultWait.upperBound)
        pacing.committed(1, arrivedMeanwhile: 0, took: .microseconds(1))
        #expect(pacing.expectedWriters == 1, "a lone sequential writer never waits")
        #expect(pacing.wait == GroupCommitPacing.defaultWait.lowerBound)
    }

    /// `groupCommitWait` bounds the wait; a zero wait gathers nobody, and waits beyond 60 s or
    /// below zero are refused.
    @Test func theConfiguredWaitBoundsGathering() async throws {
        var pacing = GroupCommitPacing(limits: .zero ... .zero)
        pacing.committed(8, arrivedMeanwhile: 0, took: .milliseconds(1))
        #expect(pacing.expectedWriters == 8)
        #expect(pacing.stragglers(from: WriteQueue(), having: 1) == nil, "a zero wait never holds a commit back")
        var patient = GroupCommitPacing(limits: .seconds(1) ... .seconds(2))
        patient.committed(8, arrivedMeanwhile: 0, took: .microseconds(10))
        #expect(patient.wait == .seconds(1))
        #expect(patient.stragglers(from: WriteQueue(), having: 1) != nil)

        let directory = try TemporaryDirectory()
        for refused in [Duration.zero ... .seconds(61), .seconds(-1) ... .zero] {
            var config = directory.configuration
            config.groupCommitWait = refused
            let message = await expectCouchetteError(.invalidParameter) { _ = try Database(name: "paced", config: config) }
            #expect(message?.contains("groupCommitWait") == true)
        }
    }

    /// When the last commit carried several writes, the next one opens its transaction with the
    /// writes at hand and takes the others as they arrive; a failing latecomer fails alone.
    @Test func writersArrivingWhileTheTransactionIsOpenJoinIt() async throws {
        let directory = try TemporaryDirectory()
        var config = directory.configuration
        config.groupCommitWait = .seconds(30) ... .seconds(30)  // a wait no scheduling delay outlasts
        let database = try Database(name: "paced", config: config)
        do {
            let spec = try database.defaultCollection().spec
            let gone = try await database.createCollection(name: "gone").spec
            try await database.deleteCollection(name: "gone")
            let queue = database.core.writeQueue
            // A commit of three writes: the next one expects three writers.
            let group = (0..<3).map { save(spec, "group-\($0)") }
            await database.submit(group)
            #expect(database.statistics.totals == (commits: 1, writes: 3))

            let first = save(spec, "first")
            let late = save(spec, "late")
            let failing = save(gone, "nowhere")
            #expect(queue.append(first, mayCommitHere: true) == .queued, "concurrency: the writer thread commits")
            // A thread of its own (see theWriterWaitsForStragglersUntilEnoughAreQueued).
            Thread.detachNewThread {
                usleep(2_000)
                _ = queue.append(late, mayCommitHere: false)
                _ = queue.append(failing, mayCommitHere: false)
            }
            for write in [first, late, failing] { await write.completion() }
            queue.leave()  // `first`'s caller
            #expect(try first.outcomes().count == 1)
            #expect(try late.outcomes().count == 1)
            #expect(failing.isCompleted)
            #expect(throws: CouchetteError.self) { try failing.outcomes() }
            #expect(database.statistics.totals == (commits: 2, writes: 6), "the latecomers joined the open transaction")
            #expect(try await database.defaultCollection().document(id: "late") != nil)
        }
        try await database.close()
    }

    @Test func eightConcurrentSaversShareCommits() async throws {
        try await withDatabase { database, _ in
            let collection = try database.defaultCollection()
            try await withThrowingTaskGroup(of: Void.self) { group in
                for writer in 0..<8 {
                    group.addTask {
                        for i in 0..<20 { try await collection.save(document: MutableDocument(id: "w\(writer)-\(i)")) }
                    }
                }
                try await group.waitForAll()
            }
            #expect(try await collection.count == 160)
            let totals = database.statistics.totals
            #expect(totals.writes == 160)
            // However the tasks are scheduled, some commit carries more than one save.
            #expect(totals.commits < 160)
        }
    }

    @Test func aCommitNobodyObservesCollectsNoIDs() async throws {
        let directory = try TemporaryDirectory()
        let database = try directory.open()
        let spec = try database.defaultCollection().spec
        let environment = database.core.environment
        let store = DocumentStore(tables: environment.tables, indexes: IndexRegistry(tables: environment.tables))
        for recordsIDs in [false, true] {
            let summary = try environment.write { txn in
                let context = WriteContext(
                    txn: txn, tables: environment.tables, now: 0, collections: [spec.number: spec], recordsIDs: recordsIDs)
                for i in 0..<3 {
                    _ = try store.apply(.save(spec, id: "d\(i)", body: Document.emptyBody, base: nil, control: .lastWriteWins), in: context)
                }
                try context.flush()
                return context.summary
            }
            #expect(summary.documentIDs[spec] == (recordsIDs ? ["d0", "d1", "d2"] : nil))
            // What the cross-process monitor needs is there either way: one range of sequences.
            let first = summary.ownWrites.sequences[spec.number]?.first
            #expect(first.map { $0.count } == 3)
            #expect(summary.ownWrites.countDeltas[spec.number] == (recordsIDs ? nil : 3), "the second round rewrote them")
        }
        try await database.close()
    }

    @Test func aDocumentWrittenTwiceInOneCommitIsListedOnce() async throws {
        try await withDatabase { database, _ in
            let spec = try database.defaultCollection().spec
            try await database.defaultCollection().save(document: MutableDocument(id: "p"))
            let observed = Observed()
            let token = database.observation.observers.add { observed.append($0) }
            defer { database.observation.observers.remove(token) }
            let writes = [
                save(spec, "a"), save(spec, "b"), save(spec, "a"),
                PendingWrite([.purge(spec, id: "p")]), save(spec, "p"),  // purged, then written again
                PendingWrite([.purge(spec, id: "b")]),
            ]
            await database.submit(writes)
            #expect(observed.all.count == 1)
            #expect(observed.ids == ["a", "b", "p"])
        }
    }
}
