import Testing

@testable import Couchette

/// The queue behind every change stream: exact below the threshold, merging beyond it.
@Suite(.tags(.concurrency)) struct ChangeBufferTests {
    @Test func everyEventOnItsOwnBelowTheThresholdThenMerged() async {
        let buffer = ChangeBuffer<[Int]>(threshold: 3) { $0 += $1 }
        for i in 1...6 { buffer.yield([i]) }
        #expect(buffer.undeliveredCount == 3)
        #expect(await buffer.next() == [1])
        #expect(await buffer.next() == [2])
        #expect(await buffer.next() == [3, 4, 5, 6])
        buffer.yield([7])
        #expect(await buffer.next() == [7])
    }

    @Test func liveQueryMergeKeepsTheNewest() async {
        let buffer = ChangeBuffer<Int>(threshold: 2) { $0 = $1 }
        for i in 1...10 { buffer.yield(i) }
        #expect(await buffer.next() == 1)
        #expect(await buffer.next() == 10)
    }

    @Test func incompatibleEventsMergeOnlyWithTheirOwnKind() async {
        // Odd and even numbers never mix: beyond the threshold each joins the newest of its kind.
        let buffer = ChangeBuffer<[Int]>(threshold: 2, compatible: { $0[0] % 2 == $1[0] % 2 }) { $0 += $1 }
        for i in 1...9 { buffer.yield([i]) }
        #expect(buffer.undeliveredCount == 2)
        #expect(await buffer.next() == [1, 3, 5, 7, 9])
        #expect(await buffer.next() == [2, 4, 6, 8])
        let evens = ChangeBuffer<[Int]>(threshold: 1, compatible: { $0[0] % 2 == $1[0] % 2 }) { $0 += $1 }
        for i in [2, 1, 4, 3] { evens.yield([i]) }
        #expect(evens.undeliveredCount == 2)  // [2, 4] then [1, 3]: no compatible event, queued alone
        #expect(await evens.next() == [2, 4])
        #expect(await evens.next() == [1, 3])
    }

    @Test func finishDeliversQueuedEventsTerminateDropsThem() async {
        let ended = Locked(0)
        let finishing = ChangeBuffer<Int>(merge: { _, _ in })
        finishing.setOnTermination { ended.withLock { $0 += 1 } }
        finishing.yield(1)
        finishing.finish()
        finishing.yield(2)  // ignored after the end
        finishing.finish()
        #expect(await finishing.next() == 1)
        #expect(await finishing.next() == nil)
        #expect(ended.withLock { $0 } == 1)

        let terminating = ChangeBuffer<Int>(merge: { _, _ in })
        terminating.setOnTermination { ended.withLock { $0 += 1 } }
        terminating.yield(1)
        terminating.terminate()
        #expect(await terminating.next() == nil)
        #expect(ended.withLock { $0 } == 2)
        // Registered after the end: runs at once.
        terminating.setOnTermination { ended.withLock { $0 += 1 } }
        #expect(ended.withLock { $0 } == 3)
    }

    @Test func aWaitingConsumerIsResumedAndCancellationEndsTheBuffer() async {
        let buffer = ChangeBuffer<Int>(merge: { _, _ in })
        let waiting = Task { await buffer.next() }
        #expect(await eventually { buffer.hasWaiter })
        buffer.yield(42)
        #expect(await waiting.value == 42)
        let cancelled = Task { await buffer.next() }
        cancelled.cancel()
        #expect(await cancelled.value == nil)
        buffer.yield(1)
        #expect(buffer.undeliveredCount == 0)  // terminated by the cancellation
    }
}
