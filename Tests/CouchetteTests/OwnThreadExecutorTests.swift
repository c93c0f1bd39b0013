import Foundation
import Testing

/// The test helper that keeps CPU-heavy tests off the cooperative pool must keep them inside
/// their test (issues still reach it) and must run them on its own thread.
@Suite struct OwnThreadExecutorTests {
    private actor Counter {
        var value = 0
        func add() -> Int { value += 1; return value }
    }

    @Test func issuesInsideStillBelongToTheTest() async {
        await withKnownIssue {
            await onAThreadOfItsOwn { #expect(Bool(false), "recorded from the helper's thread") }
        }
    }

    @Test func theBodyRunsOnTheHelpersThreadAndCanAwaitActors() async throws {
        let counter = Counter()
        let caller = "\(pthread_self())"  // a pool thread, alive throughout: no other thread has its id
        let threads = await onAThreadOfItsOwn { () -> (first: String, second: String, count: Int) in
            let first = "\(pthread_self())"
            let count = await counter.add() + counter.add()
            return (first, "\(pthread_self())", count)
        }
        #expect(threads.count == 3)
        // A default actor runs on the preferred executor: the body comes back to the same thread.
        #expect(threads.first == threads.second)
        #expect(threads.first != caller)
    }
}
