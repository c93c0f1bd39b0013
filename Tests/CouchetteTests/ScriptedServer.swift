import Foundation
import Glibc

@testable import Couchette
@testable import CouchetteBenchmarks

/// A loopback TCP server whose every connection runs a script on a thread of its own (blocking
/// sockets): the script reads requests and writes exactly the bytes a test wants, at the pace it
/// wants — a head cut short, a body held back, a server that accepts and never answers.
final class ScriptedServer: Sendable {
    /// One accepted connection, handed to the script.
    final class Connection {
        let socket: Int32
        private let reader: MessageReader

        init(_ socket: Int32) {
            self.socket = socket
            reader = MessageReader(socket)
        }

        /// The next request's head (request line and headers), nil when the client closed.
        func readRequest() -> String? { reader.readRequest()?.head }

        @discardableResult
        func write(_ text: String) -> Bool { write(Array(text.utf8)) }

        @discardableResult
        func write(_ bytes: [UInt8]) -> Bool { LoopbackSocket.sendAll(socket, bytes) }

        /// Waits (at most `limit`) until the client closes the connection; true if it did.
        func waitForClientClose(within limit: Duration) -> Bool {
            let deadline = ContinuousClock.now + limit
            var byte: UInt8 = 0
            var timeout = timeval(tv_sec: 0, tv_usec: 50_000)
            setsockopt(socket, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
            while ContinuousClock.now < deadline {
                let count = recv(socket, &byte, 1, 0)
                if count == 0 || (count < 0 && errno != EAGAIN && errno != EINTR) { return true }
            }
            return false
        }
    }

    private struct State {
        var accepted = 0
        var sockets: Set<Int32> = []
        var stopped = false
    }

    let port: UInt16
    private let listening: Int32
    private let state = Locked(State())

    /// - Parameter script: runs once per connection; the connection is closed when it returns.
    init(_ script: @escaping @Sendable (Connection) -> Void) throws {
        let (listening, port) = try LoopbackSocket.listen(backlog: 16)
        self.listening = listening
        self.port = port
        let state = self.state
        Thread.detachNewThread {
            while true {
                guard let client = LoopbackSocket.accept(listening) else { return }
                let accepted = state.withLock { state -> Bool in
                    guard !state.stopped else { return false }
                    state.accepted += 1
                    state.sockets.insert(client)
                    return true
                }
                guard accepted else { close(client); return }
                Thread.detachNewThread {
                    script(Connection(client))
                    state.withLock { _ = $0.sockets.remove(client) }
                    close(client)
                }
            }
        }
    }

    var url: String { "http://127.0.0.1:\(port)" }
    /// Connections accepted so far.
    var accepted: Int { state.withLock { $0.accepted } }

    func stop() {
        let sockets = state.withLock { state in
            state.stopped = true
            return state.sockets
        }
        for socket in sockets { shutdown(socket, Int32(SHUT_RDWR)) }
        shutdown(listening, Int32(SHUT_RDWR))
        close(listening)
    }
}
