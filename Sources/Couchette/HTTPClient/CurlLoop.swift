import CCurl
import Foundation

/// The thread that drives one libcurl multi handle: it adds and removes easy handles, waits in
/// `curl_multi_poll` for socket activity, libcurl's own timers or the next idle deadline, runs
/// the transfers, and reports their results to their ``HTTPTransfer``s.
///
/// Other threads talk to it only through ``submit(_:)``: a command queue under a lock plus
/// `curl_multi_wakeup`, which interrupts the poll at once. So every libcurl call except
/// `curl_multi_wakeup` happens on the loop thread, and every easy handle (``CurlTransfer``)
/// lives and dies there. Connections stay open between requests in the multi handle's cache
/// (keep-alive), and close when the loop shuts down.
final class CurlLoop: Sendable {
    private enum Command {
        case start(HTTPTransfer, HTTPClientRequest)
        case cancel(Int)
        case resume(Int)
        case shutdown
    }

    private struct Queue {
        var commands: [Command] = []
        /// Set by the loop thread before it destroys the multi handle: no more wakeups.
        var isClosed = false
        var nextID = 0
    }

    private let queue = Locked(Queue())
    private let multi: MultiHandle

    /// The multi handle, shared with other threads for `curl_multi_wakeup` only.
    // @unchecked: the pointer is immutable; other threads use it only in `curl_multi_wakeup`,
    // which libcurl documents as callable from any thread, and only under `queue`'s lock while
    // `isClosed` is false — the loop thread sets `isClosed` under the same lock before
    // `curl_multi_cleanup`, so no wakeup can reach a destroyed handle. Every other use is on the
    // loop thread.
    private struct MultiHandle: @unchecked Sendable {
        let pointer: UnsafeMutableRawPointer
    }

    /// Starts the loop thread.
    /// - Parameter maxConnectionsPerHost: kept-alive and concurrent connections to one host.
    init(maxConnectionsPerHost: Int = 8) {
        CurlLoop.initializeLibcurl
        guard let pointer = curl_multi_init() else {
            fatalError("libcurl could not create a multi handle (out of memory)")
        }
        _ = ccurl_multi_setopt_long(pointer, CURLMOPT_MAX_HOST_CONNECTIONS, maxConnectionsPerHost)
        multi = MultiHandle(pointer: pointer)
        RunningCurlLoops.shared.add(self)
        let thread = Thread { [self] in run() }
        thread.name = "couchette.http"
        thread.start()
    }

    /// `curl_global_init`, once per process (thread-safe in libcurl ≥ 7.84), then the exit
    /// handler that ends running loops before OpenSSL's own exit handler runs.
    private static let initializeLibcurl: Void = {
        _ = curl_global_init(Int(CURL_GLOBAL_ALL))
        RunningCurlLoops.installExitHandler()
    }()

    func makeID() -> Int {
        queue.withLock { queue in
            queue.nextID += 1
            return queue.nextID
        }
    }

    func start(_ transfer: HTTPTransfer, _ request: HTTPClientRequest) {
        if !submit(.start(transfer, request)) {
            transfer.finish(.failure(CouchetteError(.io, "the HTTP client was shut down")))
        }
    }

    func cancel(_ id: Int) { submit(.cancel(id)) }
    func resume(_ id: Int) { submit(.resume(id)) }

    /// Ends every transfer, closes every connection and stops the thread (asynchronously:
    /// ``RunningCurlLoops`` tells when the thread ended).
    func shutdown() { submit(.shutdown) }

    @discardableResult
    private func submit(_ command: Command) -> Bool {
        queue.withLock { queue in
            guard !queue.isClosed else { return false }
            queue.commands.append(command)
            curl_multi_wakeup(multi.pointer)
            return true
        }
    }

    // MARK: - The loop thread

    private func run() {
        var running: [Int: CurlTransfer] = [:]
        var isStopping = false
        while !isStopping {
            for command in queue.withLock({ queue in
                defer { queue.commands = [] }; return queue.commands
            }) {
                switch command {
                case .start(let transfer, let request):
                    guard !transfer.hasEnded else { continue }  // cancelled before it started
                    do {
                        let curl = try CurlTransfer(request, transfer: transfer)
                        let added = curl_multi_add_handle(multi.pointer, curl.easy)
                        guard added == CURLM_OK else {
                            throw CouchetteError(.io, "libcurl could not start a request: \(String(cString: curl_multi_strerror(added)))")
                        }
                        running[transfer.id] = curl
                    } catch {
                        transfer.finish(.failure(error))
                    }
                case .cancel(let id):
                    if let curl = running.removeValue(forKey: id) { remove(curl) }
                case .resume(let id):
                    running[id]?.resume()
                case .shutdown:
                    isStopping = true
                }
            }
            if isStopping { break }

            var stillRunning: Int32 = 0
            curl_multi_perform(multi.pointer, &stillRunning)
            var remaining: Int32 = 0
            while let message = curl_multi_info_read(multi.pointer, &remaining) {
                guard message.pointee.msg == CURLMSG_DONE, let easy = message.pointee.easy_handle else { continue }
                let code = message.pointee.data.result
                var context: UnsafeMutableRawPointer?
                _ = ccurl_easy_getinfo_pointer(easy, CURLINFO_PRIVATE, &context)
                guard let context else { continue }
                let curl = Unmanaged<CurlTransfer>.fromOpaque(context).takeUnretainedValue()
                running[curl.transfer.id] = nil
                remove(curl)
                curl.complete(code)
            }

            let now = ContinuousClock.now
            var wait = Duration.seconds(30)
            for (id, curl) in running {
                guard let deadline = curl.idleDeadline else { continue }
                if deadline <= now {
                    running[id] = nil
                    remove(curl)
                    curl.expire()
                } else {
                    wait = min(wait, deadline - now)
                }
            }
            // Also returns early for libcurl's own timers and for `curl_multi_wakeup`.
            curl_multi_poll(multi.pointer, nil, 0, Int32(CurlTransfer.milliseconds(wait) + 1), nil)
        }

        queue.withLock { $0.isClosed = true }
        for (_, curl) in running {
            remove(curl)
            curl.transfer.finish(.failure(CouchetteError(.io, "the HTTP client was shut down")))
        }
        running = [:]
        // Commands that arrived before `isClosed`: their transfers end here.
        for case .start(let transfer, _) in queue.withLock({ $0.commands }) {
            transfer.finish(.failure(CouchetteError(.io, "the HTTP client was shut down")))
        }
        curl_multi_cleanup(multi.pointer)
        RunningCurlLoops.shared.remove(self)
    }

    private func remove(_ curl: CurlTransfer) {
        curl_multi_remove_handle(multi.pointer, curl.easy)
    }
}
