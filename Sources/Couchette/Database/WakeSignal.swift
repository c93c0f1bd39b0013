/// Lets a background loop sleep until a deadline or until someone signals it, whichever is first.
final class WakeSignal: Sendable {
    private struct State {
        var waiter: CheckedContinuation<Void, Never>?
        var signalled = false
    }

    private let state = Locked(State())

    /// Returns once `clock` reads `deadline` (milliseconds since 1970), at ``signal()``, or at
    /// cancellation.
    func wait(untilMilliseconds deadline: UInt64, on clock: any WallClock) async {
        let timer = Task { [weak self] in
            await clock.sleep(untilMilliseconds: deadline)
            if !Task.isCancelled { self?.signal() }
        }
        defer { timer.cancel() }
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let resumeNow = state.withLock { state in
                    if state.signalled {
                        state.signalled = false
                        return true
                    }
                    state.waiter = continuation
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        } onCancel: {
            signal()
        }
    }

    /// Wakes the waiter, or the next one if nobody waits now.
    func signal() {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            if let waiter = state.waiter {
                state.waiter = nil
                return waiter
            }
            state.signalled = true
            return nil
        }
        waiter?.resume()
    }
}
