/// The queue between a change producer (the writer thread's commit observer, a live query's
/// evaluation task) and the one task iterating a ``ChangeStream``.
///
/// Below ``mergeThreshold`` undelivered events every event is queued on its own, so a consumer
/// that keeps up sees exactly one event per commit. Beyond it, a further event is merged into the
/// newest queued one with the feed's `merge` function (the union of document ids for collection
/// and document feeds, "keep the newer" for live queries): a slow consumer holds at most
/// `mergeThreshold` events, never an unbounded backlog, and nothing is dropped.
///
/// The buffer ends in one of two ways:
/// - ``finish()`` (the database closed): queued events are still delivered, then `nil`.
/// - ``terminate()`` (the consumer went away: break, cancellation, the stream dropped): queued
///   events are discarded at once.
/// Either way `onTermination` runs exactly once, which is where feeds unregister their observer.
final class ChangeBuffer<Element: Sendable>: Sendable {
    /// How many undelivered events a buffer holds before merging further ones.
    static var mergeThreshold: Int { 64 }

    typealias Merge = @Sendable (inout Element, Element) -> Void

    private struct State {
        var pending: [Element] = []
        /// Index of the next event to hand out; `pending` is compacted when it is drained.
        var head = 0
        var waiter: CheckedContinuation<Element?, Never>?
        var isFinished = false
        var onTermination: (@Sendable () -> Void)?
        var hasTerminated = false

        var undelivered: Int { pending.count - head }
    }

    /// Whether a further event may be merged into a queued one (`queued`, `newer`).
    typealias Compatible = @Sendable (Element, Element) -> Bool

    private let state = Locked(State())
    private let merge: Merge
    private let compatible: Compatible?
    private let threshold: Int

    /// - Parameter compatible: when set, an event beyond the threshold merges into the newest
    ///   queued event it is compatible with, and is queued on its own when there is none (so a
    ///   feed with k kinds of events that never mix holds at most `threshold + k` of them).
    init(threshold: Int = ChangeBuffer.mergeThreshold, compatible: Compatible? = nil, merge: @escaping Merge) {
        self.threshold = max(1, threshold)
        self.compatible = compatible
        self.merge = merge
    }

    /// Sets what to do once the buffer ends. Runs at once when it already has.
    func setOnTermination(_ action: @escaping @Sendable () -> Void) {
        let runNow = state.withLock { state -> Bool in
            if state.isFinished { return true }
            state.onTermination = action
            return false
        }
        if runNow { action() }
    }

    /// Hands `element` to the waiting consumer, queues it, or merges it into the newest queued event.
    func yield(_ element: Element) {
        let waiter = state.withLock { state -> CheckedContinuation<Element?, Never>? in
            guard !state.isFinished else { return nil }
            if let waiter = state.waiter {
                state.waiter = nil
                return waiter
            }
            if state.undelivered >= threshold, let target = mergeTarget(for: element, in: state) {
                merge(&state.pending[target], element)
            } else {
                state.pending.append(element)
            }
            return nil
        }
        waiter?.resume(returning: element)
    }

    /// The queued event `element` merges into: the newest one, or the newest compatible one.
    private func mergeTarget(for element: Element, in state: State) -> Int? {
        guard let compatible else { return state.pending.count - 1 }
        return state.pending[state.head...].lastIndex { compatible($0, element) }
    }

    /// No more events will come: the consumer receives what is queued, then the end.
    func finish() { end(discardingPending: false) }

    /// The consumer is gone: drop what is queued and end now.
    func terminate() { end(discardingPending: true) }

    private func end(discardingPending: Bool) {
        let (waiter, action) = state.withLock { state -> (CheckedContinuation<Element?, Never>?, (@Sendable () -> Void)?) in
            state.isFinished = true
            if discardingPending {
                state.pending.removeAll()
                state.head = 0
            }
            let waiter = state.waiter
            state.waiter = nil
            var action: (@Sendable () -> Void)?
            if !state.hasTerminated {
                state.hasTerminated = true
                action = state.onTermination
                state.onTermination = nil
            }
            return (waiter, action)
        }
        waiter?.resume(returning: nil)
        action?()
    }

    /// The next event, waiting for one; nil once the buffer has ended and is drained, or when the
    /// calling task is cancelled (which also terminates the buffer).
    func next() async -> Element? {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Element?, Never>) in
                let result = state.withLock { state -> Element?? in
                    if state.head < state.pending.count {
                        let element = state.pending[state.head]
                        state.head += 1
                        if state.head == state.pending.count {
                            state.pending.removeAll(keepingCapacity: true)
                            state.head = 0
                        }
                        return .some(element)
                    }
                    if state.isFinished { return .some(nil) }
                    state.waiter = continuation
                    return .none
                }
                if let result { continuation.resume(returning: result) }
            }
        } onCancel: {
            terminate()
        }
    }
}
