import Foundation

@testable import Couchette

/// A wall clock that moves only when a test says so: expiration tests advance it instead of
/// sleeping, so what they check happens at an exact millisecond. Starts at a fixed instant.
final class TestClock: WallClock {
    private struct Sleeper {
        let id: Int
        let deadline: UInt64
        let continuation: CheckedContinuation<Void, Never>
    }

    private struct State {
        var now: UInt64
        var nextID = 0
        var sleepers: [Sleeper] = []
    }

    private let state: Locked<State>

    init(milliseconds: UInt64 = 1_800_000_000_000) {
        state = Locked(State(now: milliseconds))
    }

    /// The clock's time as a `Date`, for the public expiration API.
    var date: Date { Date(timeIntervalSince1970: Double(nowMilliseconds()) / 1000) }

    func nowMilliseconds() -> UInt64 { state.withLock { $0.now } }

    /// Moves the clock forward, waking every sleeper whose deadline it reaches.
    func advance(byMilliseconds delta: UInt64) {
        let due = state.withLock { state -> [Sleeper] in
            state.now += delta
            let now = state.now
            let due = state.sleepers.filter { $0.deadline <= now }
            state.sleepers.removeAll { $0.deadline <= now }
            return due
        }
        for sleeper in due { sleeper.continuation.resume() }
    }

    func sleep(untilMilliseconds deadline: UInt64) async {
        let id = state.withLock { state -> Int in
            state.nextID += 1
            return state.nextID
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let resumeNow = state.withLock { state -> Bool in
                    if deadline <= state.now || Task.isCancelled { return true }
                    state.sleepers.append(Sleeper(id: id, deadline: deadline, continuation: continuation))
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        } onCancel: {
            let sleeper = state.withLock { state -> Sleeper? in
                guard let index = state.sleepers.firstIndex(where: { $0.id == id }) else { return nil }
                return state.sleepers.remove(at: index)
            }
            sleeper?.continuation.resume()
        }
    }
}

extension TemporaryDirectory {
    /// Opens the database `name` here with `clock` as its wall clock.
    func open(_ name: String = "test", clock: TestClock) throws -> Database {
        try Database(name: name, config: configuration, clock: clock)
    }
}
