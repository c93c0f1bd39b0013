import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

extension URLSession {
    /// `data(for:)`, except that cancelling the Swift task abandons the request instead of
    /// cancelling its `URLSessionTask`: the call throws `CancellationError` at once, and the
    /// request finishes in the background (its timeout bounds it), its answer dropped.
    ///
    /// Why: FoundationNetworking cannot cancel a task safely while its answer lands. Its own
    /// `data(for:)` cancels while holding the Swift task's status lock and waits for the session's
    /// work queue, which waits for that lock to resume the task: a deadlock
    /// (swift-corelibs-foundation #5412, fixed by #5417, not in every toolchain) — seen here as a
    /// `Replicator.stop()` that never returned. Cancelling from another thread instead crashes
    /// ("Trying to access a behaviour for a task that in not in the registry") when the task has
    /// just completed. `RequestCancellationTests` reproduces both.
    func dataAbandonedOnCancel(for request: URLRequest) async throws -> (Data, URLResponse) {
        let waiting = Locked<CheckedContinuation<(Data, URLResponse), any Error>?>(nil)
        let take: @Sendable () -> CheckedContinuation<(Data, URLResponse), any Error>? = { waiting.withLock { continuation in defer { continuation = nil }; return continuation } }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                waiting.withLock { $0 = continuation }
                // Cancelled before the continuation was stored: the handler below found nothing.
                if Task.isCancelled {
                    take()?.resume(throwing: CancellationError())
                    return
                }
                dataTask(with: request) { data, response, error in
                    guard let continuation = take() else { return }   // abandoned
                    if let error {
                        continuation.resume(throwing: error)
                    } else if let response {
                        continuation.resume(returning: (data ?? Data(), response))
                    } else {
                        continuation.resume(throwing: URLError(.badServerResponse))
                    }
                }.resume()
            }
        } onCancel: {
            take()?.resume(throwing: CancellationError())
        }
    }
}
