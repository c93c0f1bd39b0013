import Foundation
import Testing

@testable import Couchette

/// A caller that commits its saves on its own thread yields that thread once a turn of own
/// commits has passed (``OwnCommitTurns``), not after every commit: other tasks on its thread
/// still run while it saves in a loop, and a saver that runs while it yields queues for the
/// writer thread.
///
/// The tests run their tasks on one thread of their own (``OwnThreadExecutor``): there a task
/// that never suspends keeps every other task from running, as it would on a busy pool.
@Suite(.serialized, .tags(.concurrency)) struct OwnCommitTurnsTests {
    /// A saving loop that never yields runs until this bound stops it from another thread.
    private static let bound: Duration = .seconds(10)

    @Test func aTurnEndsAfterASliceAndSomeCommits() {
        var turns = OwnCommitTurns()
        let start = ContinuousClock.now
        // The first commit starts a turn; past the slice, too few commits still go on.
        let early = [0, 5, 6].map { turns.committed(endingAt: start + .milliseconds($0)) }
        #expect(early == [false, false, false])
        let fourth = turns.committed(endingAt: start + .milliseconds(7))
        #expect(fourth, "the fourth commit, past the slice")
        // Many quick commits: the turn lasts the slice.
        let next = start + .milliseconds(8)
        var yields: [Int] = []
        for index in 0..<40 where turns.committed(endingAt: next + .microseconds(100) * index) { yields.append(index) }
        #expect(yields == [10, 21, 32], "one commit past each millisecond since the turn's first")
        turns.endTurn()
        let afterEnd = turns.committed(endingAt: next + .seconds(1))
        #expect(!afterEnd, "a turn ended early: the next commit starts one")
    }

    /// Another task on the saver's only thread runs while the saver keeps saving: without the
    /// yields it would wait until the bound stopped the loop.
    @Test(.timeLimit(.minutes(3))) func aTaskSavingInALoopLetsOthersOnItsThreadRun() async throws {
        try await withDatabase { database, _ in
            let collection = try database.defaultCollection()
            let state = Locked((stopped: false, stoppedByBound: false, saves: 0, savesWhenOtherRan: 0))
            let started = ContinuousClock.now
            Thread.detachNewThread {
                while ContinuousClock.now - started < Self.bound && !state.withLock({ $0.stopped }) { usleep(10_000) }
                state.withLock { state in
                    state.stoppedByBound = !state.stopped
                    state.stopped = true
                }
            }
            try await onAThreadOfItsOwn {
                try await withThrowingTaskGroup(of: Void.self) { group in
                    group.addTask {
                        var index = 0
                        while !state.withLock({ $0.stopped }) {
                            try await collection.save(document: MutableDocument(id: "loop-\(index)"))
                            index += 1
                            state.withLock { $0.saves = index }
                        }
                    }
                    group.addTask {
                        state.withLock { state in
                            state.savesWhenOtherRan = state.saves
                            state.stopped = true
                        }
                    }
                    try await group.waitForAll()
                }
            }
            let outcome = state.withLock { $0 }
            #expect(!outcome.stoppedByBound, "the other task waited until the saves were stopped")
            #expect(outcome.savesWhenOtherRan >= 1, "the saver ran first")
            #expect(!database.writer.hasStarted, "the saver committed on its own thread")
        }
    }

    /// The saver gives its thread up once per turn, not after each of its commits: another task
    /// yielding in a loop on the same thread gets a turn at most once per
    /// ``OwnCommitTurns/minimumCommits`` saves.
    @Test(.timeLimit(.minutes(3))) func aLoneSaverYieldsOncePerTurnNotPerSave() async throws {
        try await withDatabase { database, _ in
            let collection = try database.defaultCollection()
            let state = Locked((done: false, otherTurns: 0, saves: 0))
            try await onAThreadOfItsOwn {
                try await withThrowingTaskGroup(of: Void.self) { group in
                    group.addTask {
                        // Enough saves and enough time for a few turns whatever the disk (a save
                        // on tmpfs takes some 25 µs, and a turn lasts 1 ms at least).
                        let start = ContinuousClock.now
                        var saves = 0
                        while saves < 40 || ContinuousClock.now - start < .milliseconds(5) {
                            try await collection.save(document: MutableDocument(id: "d\(saves)"))
                            saves += 1
                        }
                        state.withLock { [saves] in $0 = (true, $0.otherTurns, saves) }
                    }
                    group.addTask {
                        while !state.withLock({ $0.done }) {
                            state.withLock { $0.otherTurns += 1 }
                            await Task.yield()
                        }
                    }
                    try await group.waitForAll()
                }
            }
            let (turns, saves) = state.withLock { ($0.otherTurns, $0.saves) }
            #expect(turns >= 1, "the saver yielded at all")
            // One turn per yield of the saver, plus the first (the other task may start after
            // the saver's first yield, or before its first save).
            #expect(turns <= saves / OwnCommitTurns.minimumCommits + 1, "\(turns) turns for \(saves) saves")
            #expect(try await collection.count == UInt64(saves))
            #expect(database.statistics.totals == (commits: saves, writes: saves))
            #expect(!database.writer.hasStarted, "every save was committed on its caller's thread")
        }
    }

    /// A saver that runs while a lone caller yields after its commit sees that caller still in
    /// flight and queues for the writer thread instead of committing alone.
    @Test(.timeLimit(.minutes(3))) func aSaverRunningWhileTheCallerYieldsQueuesForTheWriter() async throws {
        try await withDatabase { database, _ in
            let collection = try database.defaultCollection()
            let state = Locked((stopped: false, otherSaved: false))
            try await onAThreadOfItsOwn {
                try await withThrowingTaskGroup(of: Void.self) { group in
                    group.addTask {
                        var index = 0
                        // Bounded: the other task runs at the first yield, within a few saves.
                        while !state.withLock({ $0.stopped }) && index < 10_000 {
                            try await collection.save(document: MutableDocument(id: "loop-\(index)"))
                            index += 1
                        }
                    }
                    group.addTask {
                        #expect(!database.writer.hasStarted, "the loop committed on its own thread so far")
                        try await collection.save(document: MutableDocument(id: "other"))
                        state.withLock { $0 = (true, true) }
                    }
                    try await group.waitForAll()
                }
            }
            #expect(state.withLock { $0.otherSaved })
            #expect(database.writer.hasStarted, "the other save was committed by the writer thread")
            #expect(try await collection.document(id: "other") != nil)
        }
    }
}
