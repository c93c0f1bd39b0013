import Foundation
import Testing

@testable import Couchette

/// The writer thread takes turns between group commits and the database actor's own calls:
/// however continuously tasks keep saving, creating a collection or closing the database runs
/// after the commit under way, instead of waiting until the saves stop.
///
/// Times are taken when the call begins to run on the actor (or when the close takes effect),
/// not when its caller resumes: a loaded machine may hold that task up for reasons of its own.
@Suite(.serialized, .tags(.concurrency)) struct WriterFairnessTests {
    /// Far longer than a few commits take, even under ThreadSanitizer on a loaded machine; a call
    /// starved by the commits waits as long as the saves go on (here: until this bound stops them).
    private static let bound: Duration = .seconds(10)

    /// Where the saves come from: tasks saving in a loop, or a new saving task every 50 µs (at
    /// most 32 at a time), which keeps writes arriving while each commit runs (the saves of tasks
    /// in a loop tend to come back in one group, leaving the queue empty once it is committed).
    static let sources: [SaveSource] = [.loops(tasks: 8), .stream(every: .microseconds(50), atMost: 32)]

    @Test(.timeLimit(.minutes(2)), arguments: sources) func actorCallsRunWhileTasksKeepSaving(source: SaveSource) async throws {
        try await withDatabase { database, _ in
            let savers = Savers(try database.defaultCollection())
            try await savers.run(source) {
                try #require(await savers.groupCommitsRun(in: database), "the savers' writes share commits")
                for index in 0..<5 {
                    let before = database.statistics.totals.commits
                    let called = ContinuousClock.now
                    let start = try await savers.bounded(by: Self.bound) {
                        try await database.createCollection(name: "made-\(index)", noting: ())
                    }
                    #expect(start.time - called < Self.bound, "createCollection waited behind the saves")
                    #expect(!savers.stoppedByBound, "the savers were still saving when it ran")
                    // The commit under way when it was called, then perhaps one more before the
                    // writer thread got to it (and, rarely, one by a caller on its own thread).
                    #expect(start.commits - before <= 4, "commits made before createCollection ran")
                }
            }
            #expect(savers.failures.isEmpty, "\(savers.failures)")
            #expect(try database.collection(name: "made-4") != nil)
        }
    }

    @Test(.timeLimit(.minutes(2)), arguments: sources) func closeRunsWhileTasksKeepSaving(source: SaveSource) async throws {
        try await withDatabase { database, _ in
            let collection = try database.defaultCollection()
            let savers = Savers(collection)
            try await savers.run(source) {
                try #require(await savers.groupCommitsRun(in: database), "the savers' writes share commits")
                // Watched from a thread of its own: when the close takes effect.
                let closed = Locked<(time: ContinuousClock.Instant, commits: Int)?>(nil)
                let before = database.statistics.totals.commits
                let called = ContinuousClock.now
                Thread.detachNewThread { [core = database.core, statistics = database.statistics] in
                    while (try? core.checkOpen()) != nil && ContinuousClock.now - called < .seconds(100) { usleep(200) }
                    closed.withLock { $0 = (.now, statistics.totals.commits) }
                }
                try await savers.bounded(by: Self.bound) { try await database.close() }
                #expect(await eventually { closed.withLock { $0 } != nil })
                if let effective = closed.withLock({ $0 }) {
                    #expect(effective.time - called < Self.bound, "close waited behind the saves")
                    #expect(effective.commits - before <= 4, "commits made before close ran")
                }
                #expect(!savers.stoppedByBound, "the savers were still saving when it ran")
            }
            // Saves after the close fail as closed; none may fail otherwise.
            #expect(savers.failures.allSatisfy { ($0 as? CouchetteError)?.code == .notOpen }, "\(savers.failures)")
            await #expect(throws: CouchetteError.self) { _ = try await collection.count }
        }
    }
}

/// How the saves of ``Savers`` arrive.
enum SaveSource: Sendable, CustomTestStringConvertible {
    /// Tasks saving documents in a loop without pause.
    case loops(tasks: Int)
    /// A thread starting a task that saves one document every `every`, without waiting for the
    /// previous ones unless `atMost` are still saving.
    case stream(every: Duration, atMost: Int)

    var testDescription: String {
        switch self {
        case .loops(let tasks): "\(tasks) tasks saving in a loop"
        case .stream(let interval, let limit): "a saving task every \(interval), at most \(limit) at once"
        }
    }
}

/// Saves documents until stopped; a save that fails stops its task.
private final class Savers: Sendable {
    private let collection: Collection
    private let state = Locked(State())

    private struct State {
        var isStopped = false
        var stoppedByBound = false
        var failures: [any Error] = []
        var started = 0
        var ended = 0
    }

    init(_ collection: Collection) { self.collection = collection }

    var failures: [any Error] { state.withLock { $0.failures } }
    /// Whether ``bounded(by:_:)`` had to stop the saves for its call to run.
    var stoppedByBound: Bool { state.withLock { $0.stoppedByBound } }
    private var isStopped: Bool { state.withLock { $0.isStopped } }

    /// Runs `body` while saves come from `source`; stops them when it returns and waits for them.
    func run(_ source: SaveSource, during body: () async throws -> Void) async throws {
        switch source {
        case .loops(let tasks):
            try await withThrowingTaskGroup(of: Void.self) { group in
                for task in 0..<tasks {
                    group.addTask { await self.saveInALoop(as: task) }
                }
                defer { stop() }
                try await body()
            }
        case .stream(let interval, let limit):
            // A thread, which no busy task holds up: the saves keep coming however the tasks run.
            let pause = useconds_t((interval / .microseconds(1)).rounded())
            Thread.detachNewThread { [self] in
                var index = 0
                while !isStopped {
                    usleep(pause)
                    let started = state.withLock { state in
                        guard state.started - state.ended < limit else { return false }
                        state.started += 1
                        return true
                    }
                    guard started else { continue }
                    let id = "s\(index)"
                    index += 1
                    Task.detached { [self] in
                        await save(id: id)
                        state.withLock { $0.ended += 1 }
                    }
                }
            }
            defer { stop() }
            try await body()
        }
        stop()
        let allEnded = await eventually(timeout: .seconds(60)) { state.withLock { $0.ended == $0.started } }
        #expect(allEnded, "every save task ended")
    }

    private func stop() { state.withLock { $0.isStopped = true } }

    private func saveInALoop(as task: Int) async {
        var index = 0
        while !isStopped {
            guard await save(id: "t\(task)-\(index)") else { return }
            index += 1
        }
    }

    /// Saves a document; false (and the error recorded) when it failed.
    @discardableResult
    private func save(id: String) async -> Bool {
        do {
            try await collection.save(document: MutableDocument(id: id).setString(id, forKey: "id"))
            return true
        } catch {
            state.withLock { $0.failures.append(error) }
            return false
        }
    }

    /// Waits until commits carry several saves each: the writer thread commits for the savers.
    func groupCommitsRun(in database: Database) async -> Bool {
        await eventually(timeout: .seconds(60)) {
            let totals = database.statistics.totals
            return totals.commits >= 10 && totals.writes > totals.commits && database.writer.hasStarted
        }
    }

    /// Runs `call`. Should it not have returned within `bound`, a thread of its own (which no
    /// busy task can hold up) stops the saves, so that a call starved by them still ends.
    @discardableResult
    func bounded<R>(by bound: Duration, _ call: () async throws -> R) async throws -> R {
        let finished = Locked(false)
        let started = ContinuousClock.now
        Thread.detachNewThread { [state] in
            while !finished.withLock({ $0 }) {
                if ContinuousClock.now - started > bound {
                    state.withLock { state in
                        state.stoppedByBound = !state.isStopped
                        state.isStopped = true
                    }
                    return
                }
                usleep(10_000)
            }
        }
        defer { finished.withLock { $0 = true } }
        return try await call()
    }
}

extension Database {
    /// Creates a collection (see ``createCollection(name:scope:)``); returns when the call began
    /// to run on the actor, and how many commits were made by then.
    fileprivate func createCollection(name: String, noting: Void) throws -> (time: ContinuousClock.Instant, commits: Int) {
        let start = (time: ContinuousClock.now, commits: statistics.totals.commits)
        _ = try createCollection(name: name)
        return start
    }
}
