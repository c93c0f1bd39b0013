import Testing

@testable import Couchette

/// The queue behind every change stream: exact below the threshold, merging beyond it.
@Suite(.tags(.concurrency)) struct ChangeBufferTests {
    /// Ends `buffer` and returns every event it still holds: what a consumer gets from now on.
    private func drain<Element: Sendable>(_ buffer: ChangeBuffer<Element>) async -> [Element] {
        buffer.finish()
        var events: [Element] = []
        while let event = await buffer.next() { events.append(event) }
        return events
    }

    @Test func everyEventOnItsOwnBelowTheThresholdThenMerged() async {
        let buffer = ChangeBuffer<[Int]>(threshold: 3) { $0 += $1 }
        for i in 1...6 { buffer.yield([i]) }
        #expect(await buffer.next() == [1])
        #expect(await buffer.next() == [2])
        #expect(await buffer.next() == [3, 4, 5, 6])
        buffer.yield([7])
        #expect(await drain(buffer) == [[7]], "three events were queued, the last one merged")
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
        #expect(await drain(buffer) == [[1, 3, 5, 7, 9], [2, 4, 6, 8]])
        let evens = ChangeBuffer<[Int]>(threshold: 1, compatible: { $0[0] % 2 == $1[0] % 2 }) { $0 += $1 }
        for i in [2, 1, 4, 3] { evens.yield([i]) }
        // [2, 4] then [1, 3]: no compatible event, queued alone
        #expect(await drain(evens) == [[2, 4], [1, 3]])
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
        let ended = Locked(false)
        buffer.setOnTermination { ended.withLock { $0 = true } }
        let waiting = Task { await buffer.next() }
        buffer.yield(42)  // resumes the waiting consumer, or waits queued for it
        #expect(await waiting.value == 42)
        let cancelled = Task { await buffer.next() }
        cancelled.cancel()
        #expect(await cancelled.value == nil)
        #expect(ended.withLock { $0 }, "the cancellation terminated the buffer")
        buffer.yield(1)
        #expect(await buffer.next() == nil, "nothing is queued after the end")
    }
}
