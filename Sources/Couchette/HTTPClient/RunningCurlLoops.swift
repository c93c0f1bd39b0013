import CCurl
import Foundation

/// The ``CurlLoop``s whose thread has not ended, so that the process can end them before it exits.
///
/// A loop closing its connections frees libcurl's TLS contexts (`SSL_CTX_free`), which take
/// OpenSSL's locks. If the process exits meanwhile — a command returning just after its
/// replicator stopped and released its client — OpenSSL's exit handler may already have freed
/// those locks, and the loop thread crashes in `CRYPTO_THREAD_unlock` (seen under
/// ThreadSanitizer, where threads run slower). So after `curl_global_init`, which registers
/// OpenSSL's exit handler, ``installExitHandler()`` registers one of ours; exit handlers run in
/// reverse order of registration, so ours runs first: it shuts every loop down and waits for
/// their threads, at most ``exitWait``.
final class RunningCurlLoops: @unchecked Sendable {
    // @unchecked: `loops` is only touched while `condition` is locked.
    private let condition = NSCondition()
    private var loops: [ObjectIdentifier: CurlLoop] = [:]

    static let shared = RunningCurlLoops()

    /// The longest the process waits at exit for loops to close their connections.
    static let exitWait = Duration.seconds(2)

    /// Registers the exit handler; call once, right after `curl_global_init`.
    static func installExitHandler() {
        atexit { RunningCurlLoops.shared.endAll(waitingAtMost: RunningCurlLoops.exitWait) }
    }

    /// Called by a loop before its thread starts.
    func add(_ loop: CurlLoop) {
        condition.lock()
        loops[ObjectIdentifier(loop)] = loop
        condition.unlock()
    }

    /// Called by a loop's thread as its very last step, after `curl_multi_cleanup`.
    func remove(_ loop: CurlLoop) {
        condition.lock()
        loops[ObjectIdentifier(loop)] = nil
        condition.broadcast()
        condition.unlock()
    }

    /// Waits until `loop`'s thread ended; false when `limit` passed first.
    func waitUntilEnded(_ loop: CurlLoop, waitingAtMost limit: Duration) -> Bool {
        wait(waitingAtMost: limit) { $0[ObjectIdentifier(loop)] == nil }
    }

    /// Shuts every loop down and waits until their threads ended; false when `limit` passed first.
    @discardableResult
    func endAll(waitingAtMost limit: Duration) -> Bool {
        condition.lock()
        let running = Array(loops.values)
        condition.unlock()
        for loop in running { loop.shutdown() }
        return wait(waitingAtMost: limit) { $0.isEmpty }
    }

    private func wait(waitingAtMost limit: Duration, until isDone: ([ObjectIdentifier: CurlLoop]) -> Bool) -> Bool {
        let (seconds, attoseconds) = limit.components
        let deadline = Date().addingTimeInterval(Double(seconds) + Double(attoseconds) / 1e18)
        condition.lock()
        defer { condition.unlock() }
        while !isDone(loops) {
            guard condition.wait(until: deadline) else { return isDone(loops) }
        }
        return true
    }
}
