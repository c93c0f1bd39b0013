import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A loopback HTTP proxy in front of a Couchette listener that answers `_changes` the way Apache
/// CouchDB 3.5 does rather than the way the listener does: a `feed=longpoll` request gets its
/// `200` head and the first bytes of the body (`{"results":[` and a newline) at once, and the
/// rest only when the listener's answer is there — when something changed or the wait ended
/// (transcripts `a05`, `a06` in Tests/CouchetteTests/Fixtures/couchdb-transcripts). Clients that
/// wait for a whole answer never see this shape from `couchette serve`, which holds its head
/// back until it has the body.
///
/// `feed=continuous` is refused with `400`, as a server without continuous feeds answers, so a
/// continuous replicator falls back to long polls through it. Every other request is forwarded
/// as it is. Threads of its own, blocking sockets; each client request opens one listener
/// connection (`Connection: close`), while client connections are kept alive.
public final class CouchDBStyleProxy: Sendable {
    public let port: UInt16
    private let upstreamPort: UInt16
    private let listening: Int32
    private let state = ProxyState()

    /// Starts accepting on an ephemeral loopback port.
    public init(upstreamPort: UInt16) throws {
        self.upstreamPort = upstreamPort
        (listening, port) = try LoopbackSocket.listen()
        Thread.detachNewThread { [self] in acceptLoop() }
    }

    /// Long polls answered so far (head sent early, body held).
    public var longPolls: Int { state.count(\.longPolls) }
    /// Continuous feeds refused so far.
    public var refusedStreams: Int { state.count(\.refusedStreams) }
    /// Body bytes forwarded so far, both ways (request bodies up, response bodies down): what
    /// the wire carried beyond the heads.
    public var forwardedBodyBytes: Int { state.count(\.bodyBytes) }

    /// Closes the listening socket and every connection.
    public func stop() {
        for socket in state.stop() { shutdown(socket, Int32(SHUT_RDWR)) }
        shutdown(listening, Int32(SHUT_RDWR))
        close(listening)
    }

    private func acceptLoop() {
        while true {
            guard let client = LoopbackSocket.accept(listening) else { return }
            guard state.track(client) else { close(client); return }
            Thread.detachNewThread { [self] in
                serve(client)
                state.untrack(client)
                close(client)
            }
        }
    }

    private func serve(_ client: Int32) {
        let reader = MessageReader(client)
        while let request = reader.readRequest() {
            let target = request.head.split(separator: " ", maxSplits: 2).dropFirst().first.map(String.init) ?? "/"
            let isChanges = target.split(separator: "?").first?.hasSuffix("/_changes") == true
            if isChanges && target.contains("feed=continuous") {
                state.increment(\.refusedStreams)
                let body = #"{"error":"bad_request","reason":"this server long-polls only"}"# + "\n"
                guard
                    send(
                        client,
                        "HTTP/1.1 400 Bad Request\r\nContent-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\n\r\n" + body)
                else { return }
                continue
            }
            let isLongPoll = isChanges && target.contains("feed=longpoll")
            if isLongPoll {
                state.increment(\.longPolls)
                let early = "{\"results\":[\n"
                let head =
                    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nCache-Control: must-revalidate\r\nTransfer-Encoding: chunked\r\n\r\n"
                guard send(client, head + String(early.utf8.count, radix: 16) + "\r\n" + early + "\r\n") else { return }
            }
            guard let response = forward(request) else { return }
            if isLongPoll {
                // The rest of the body, after the `{"results":[` already sent, in CouchDB's layout.
                guard response.status == 200, let rest = Self.restOfLongPoll(response.body),
                    sendAll(client, Array(String(rest.count, radix: 16).utf8) + [13, 10] + rest + [13, 10]),
                    send(client, "0\r\n\r\n")
                else { return }
            } else {
                var head = response.headLines.filter {
                    let name = $0.lowercased()
                    return !name.hasPrefix("connection:") && !name.hasPrefix("content-length:") && !name.hasPrefix("transfer-encoding:")
                }
                head.append("Content-Length: \(response.body.count)")
                guard sendAll(client, Array((head.joined(separator: "\r\n") + "\r\n\r\n").utf8) + response.body) else { return }
            }
        }
    }

    /// The listener's `{"results": […], "last_seq": …, "pending": …}` (in any key order) as what
    /// follows `{"results":[` in CouchDB's answer: one row per line, then `last_seq` and `pending`.
    private static func restOfLongPoll(_ body: [UInt8]) -> [UInt8]? {
        guard let object = try? JSONSerialization.jsonObject(with: Data(body)) as? [String: Any],
            let rows = object["results"] as? [Any], let last = object["last_seq"],
            let lastText = try? JSONSerialization.data(withJSONObject: last, options: .fragmentsAllowed)
        else { return nil }
        let rowTexts = rows.compactMap { try? JSONSerialization.data(withJSONObject: $0) }.map { String(decoding: $0, as: UTF8.self) }
        let pending = (object["pending"] as? Int).map { ",\"pending\":\($0)" } ?? ""
        let rest = rowTexts.joined(separator: ",\n") + "\n],\n\"last_seq\":" + String(decoding: lastText, as: UTF8.self) + pending + "}\n"
        return Array(rest.utf8)
    }

    /// Sends `request` to the listener on a new connection and reads the whole answer.
    private func forward(_ request: MessageReader.Request) -> MessageReader.Response? {
        guard let upstream = LoopbackSocket.connect(port: upstreamPort) else { return nil }
        defer { close(upstream) }
        guard state.track(upstream) else { return nil }
        defer { state.untrack(upstream) }
        let lines = request.head.components(separatedBy: "\r\n").filter { !$0.lowercased().hasPrefix("connection:") && !$0.isEmpty }
        guard sendAll(upstream, Array((lines.joined(separator: "\r\n") + "\r\nConnection: close\r\n\r\n").utf8) + request.body) else {
            return nil
        }
        let response = MessageReader(upstream).readResponse()
        state.add(request.body.count + (response?.body.count ?? 0), to: \.bodyBytes)
        return response
    }

    private func send(_ socket: Int32, _ text: String) -> Bool { sendAll(socket, Array(text.utf8)) }

    private func sendAll(_ socket: Int32, _ bytes: [UInt8]) -> Bool { LoopbackSocket.sendAll(socket, bytes) }
}

/// The proxy's counters and open sockets, under a lock (NSLock: pthread underneath, which
/// ThreadSanitizer understands).
// @unchecked: `counts` is only read or written inside `withLock`, which holds `lock`.
private final class ProxyState: @unchecked Sendable {
    struct Counts {
        var longPolls = 0
        var refusedStreams = 0
        var bodyBytes = 0
        var sockets: Set<Int32> = []
        var stopped = false
    }

    private var counts = Counts()
    private let lock = NSLock()

    func count(_ key: KeyPath<Counts, Int>) -> Int { withLock { $0[keyPath: key] } }
    func increment(_ key: WritableKeyPath<Counts, Int>) { add(1, to: key) }
    func add(_ amount: Int, to key: WritableKeyPath<Counts, Int>) { withLock { $0[keyPath: key] += amount } }

    func track(_ socket: Int32) -> Bool {
        withLock { counts in
            guard !counts.stopped else { return false }
            counts.sockets.insert(socket)
            return true
        }
    }

    func untrack(_ socket: Int32) { _ = withLock { $0.sockets.remove(socket) } }

    func stop() -> Set<Int32> {
        withLock { counts in
            counts.stopped = true
            return counts.sockets
        }
    }

    private func withLock<R>(_ body: (inout Counts) -> R) -> R {
        lock.lock()
        defer { lock.unlock() }
        return body(&counts)
    }
}
