import Foundation
import Glibc

@testable import Couchette
@testable import CouchetteBenchmarks

/// A TCP proxy on loopback that forwards HTTP/1.1 exchanges to a listener and breaks them on
/// purpose: a seeded generator decides, per request, whether the connection is dropped before the
/// request is forwarded, after part of it, after part of the response, or closed after the whole
/// response (instead of kept alive), or whether the exchange is just delayed.
///
/// It also records every request it forwarded in full (method, target, body), so tests can count
/// what a replicator asked for, and it can hold one chosen request until the test releases it
/// (the connection is then dropped, the request never forwarded).
///
/// Everything runs on threads of its own with blocking sockets: one accepting, one per client
/// connection. The cooperative pool never waits on it. The seed fixes the generator, not the
/// thread timing, so two runs with one seed inject the same kinds of faults in a similar, not
/// identical, order.
final class FaultProxy: Sendable {
    enum Fault: String, CaseIterable, Sendable {
        case dropBeforeRequest, partialRequest, partialResponse, closeAfterResponse, delay
    }

    /// Where a `.partialResponse` cut its answer.
    enum CutPoint: String, CaseIterable, Sendable {
        case statusLine, head, body, chunkedBody
    }

    /// A request forwarded in full to the listener.
    struct Request: Sendable {
        let method: String
        /// Path and query, as sent (`/db/_bulk_get?revs=true`).
        let target: String
        let body: [UInt8]

        var path: Substring { target.prefix { $0 != "?" } }
        var json: Value? { body.isEmpty ? nil : try? JSON.parse(String(decoding: body, as: UTF8.self)) }
    }

    private struct State {
        var random: UInt64
        var faultRate: Int
        var upstreamPort: UInt16
        var faults: [Fault: Int] = [:]
        var nextCut: Int
        var cuts: [CutPoint: Int] = [:]
        var requests: [Request] = []
        var log: [String] = []
        var nextConnection = 0
        var sockets: Set<Int32> = []
        var stopped = false
        var hold: (@Sendable (Request) -> Bool)?
        var holding = false
        var released = false
    }

    /// The port clients connect to.
    let port: UInt16
    private let listening: Int32
    private let state: Locked<State>

    /// - Parameters:
    ///   - upstreamPort: the listener's port.
    ///   - faultRate: faults per 1,000 requests (0: a plain, counting proxy).
    init(upstreamPort: UInt16, seed: UInt64, faultRate: Int = 0) throws {
        // The cut points rotate from a seed-given one, so runs with few cuts still cover them all.
        state = Locked(
            State(
                random: seed, faultRate: faultRate, upstreamPort: upstreamPort,
                nextCut: Int(seed % UInt64(CutPoint.allCases.count))))
        (listening, port) = try LoopbackSocket.listen()
        Thread.detachNewThread { [self] in acceptLoop() }
    }

    /// `http://127.0.0.1:<port>/<database>`.
    func url(_ database: String) -> URL { URL(string: "http://127.0.0.1:\(port)/\(database)")! }

    /// How many times each fault was injected.
    var faults: [Fault: Int] { state.withLock { $0.faults } }
    /// How many answers were cut at each point.
    var cuts: [CutPoint: Int] { state.withLock { $0.cuts } }
    /// Connections closed on purpose (every fault but `.delay`).
    var droppedConnections: Int { state.withLock { $0.faults.filter { $0.key != .delay }.values.reduce(0, +) } }
    /// The requests forwarded in full, in order.
    var requests: [Request] { state.withLock { $0.requests } }

    /// What happened, one line per request or closed connection (for failure messages).
    var log: [String] { state.withLock { $0.log } }

    private func note(_ line: String) { state.withLock { $0.log.append(line) } }

    /// Client and listener connections open right now.
    var openSockets: Int { state.withLock { $0.sockets.count } }

    func setFaultRate(_ rate: Int) { state.withLock { $0.faultRate = rate } }
    func setUpstreamPort(_ port: UInt16) { state.withLock { $0.upstreamPort = port } }

    /// Holds the next request matching `predicate` (instead of forwarding it) until
    /// ``releaseHeld()``; ``isHolding`` tells when one arrived.
    func hold(where predicate: @escaping @Sendable (Request) -> Bool) {
        state.withLock { state in
            state.hold = predicate
            state.holding = false
            state.released = false
        }
    }

    var isHolding: Bool { state.withLock { $0.holding } }

    /// Drops the held request's connection (the request is never forwarded).
    func releaseHeld() { state.withLock { $0.released = true } }

    /// Closes the listening socket and every connection.
    func stop() {
        let sockets = state.withLock { state -> Set<Int32> in
            state.stopped = true
            state.released = true
            return state.sockets
        }
        shutdown(listening, Int32(SHUT_RDWR))
        for socket in sockets { shutdown(socket, Int32(SHUT_RDWR)) }
    }

    deinit { close(listening) }

    // MARK: - Connections

    private func acceptLoop() {
        while true {
            guard let client = LoopbackSocket.accept(listening) else { return }
            guard track(client) else { close(client); return }
            Thread.detachNewThread { [self] in
                serve(client)
            }
        }
    }

    /// Registers `socket` for ``stop()``; false once stopped.
    private func track(_ socket: Int32) -> Bool {
        var timeout = timeval(tv_sec: 90, tv_usec: 0)  // a stuck peer cannot hold a thread forever
        setsockopt(socket, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        return state.withLock { state in
            guard !state.stopped else { return false }
            state.sockets.insert(socket)
            return true
        }
    }

    private func untrack(_ socket: Int32) {
        _ = state.withLock { $0.sockets.remove(socket) }
        close(socket)
    }

    /// Forwards the exchanges of one client connection until a side closes or a fault ends it.
    private func serve(_ client: Int32) {
        let fromClient = SocketReader(client)
        var upstream: Int32?
        let number = state.withLock { state in
            state.nextConnection += 1
            return state.nextConnection
        }
        defer {
            note("#\(number) closed")
            untrack(client)
            if let upstream { untrack(upstream) }
        }
        while let request = fromClient.readMessage(isResponse: false, requestMethod: nil) {
            let fault = nextFault()
            let parsed = Request(method: request.method, target: request.target, body: request.body)
            note("#\(number) \(request.method) \(request.target) \(request.body.count)B \(fault.map { "\($0)" } ?? "")")
            if shouldHold(parsed) { return }
            if fault == .dropBeforeRequest { return }
            if fault == .delay { usleep(UInt32(1_000 + random(below: 20_000))) }
            if upstream == nil { upstream = connectUpstream() }
            guard let server = upstream else { return }  // the listener is down: drop the client
            if fault == .partialRequest {
                _ = sendAll(server, Array(request.raw.prefix(1 + random(below: max(1, request.raw.count - 1)))))
                return
            }
            guard sendAll(server, request.raw) else { return }
            state.withLock { $0.requests.append(parsed) }
            guard var response = SocketReader(server).readMessage(isResponse: true, requestMethod: request.method) else { return }
            // Half the answers go on re-framed as chunked (in pieces of 1–300 bytes), so cuts
            // land inside chunk framing too.
            if !response.body.isEmpty && random(below: 2) == 0 { response = rechunked(response) }
            if fault == .partialResponse {
                // Anywhere in the answer, each point in turn: inside the status line, among the
                // headers, in a plain body, in a chunked one (its framing included).
                var point = state.withLock { state in
                    defer { state.nextCut += 1 }
                    return CutPoint.allCases[state.nextCut % CutPoint.allCases.count]
                }
                if point == .body || point == .chunkedBody, !response.body.isEmpty {
                    response =
                        point == .chunkedBody
                        ? (response.isChunked ? response : rechunked(response))
                        : (response.isChunked ? plain(response) : response)
                } else if point == .body || point == .chunkedBody {
                    point = .head
                }
                let status = response.statusLineLength
                let cut =
                    switch point {
                    case .statusLine: 1 + random(below: status - 1)
                    case .head: status + random(below: response.headLength - status)
                    case .body, .chunkedBody: response.headLength + random(below: response.raw.count - response.headLength)
                    }
                state.withLock { $0.cuts[point, default: 0] += 1 }
                note("#\(number) cut \(response.method) at \(cut) of \(response.raw.count) (\(point))")
                _ = sendAll(client, Array(response.raw.prefix(cut)))
                return
            }
            note("#\(number) answered \(response.method) \(response.raw.count)B")
            guard sendAll(client, response.raw), fault != .closeAfterResponse, !response.closes, !request.closes else { return }
        }
    }

    private func shouldHold(_ request: Request) -> Bool {
        let matches = state.withLock { state -> Bool in
            guard let hold = state.hold, hold(request) else { return false }
            state.hold = nil
            state.holding = true
            return true
        }
        guard matches else { return false }
        while !state.withLock({ $0.released }) { usleep(2_000) }
        return true
    }

    /// A number in `0..<bound` from the seeded generator.
    private func random(below bound: Int) -> Int {
        state.withLock { state in
            state.random = state.random &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return Int((state.random >> 33) % UInt64(bound))
        }
    }

    /// The fault for the next request, from the seeded generator (nil: forward as is).
    private func nextFault() -> Fault? {
        let roll = random(below: 1000)
        return state.withLock { state -> Fault? in
            guard roll < state.faultRate else { return nil }
            let fault = Fault.allCases[roll % Fault.allCases.count]
            state.faults[fault, default: 0] += 1
            return fault
        }
    }

    private func connectUpstream() -> Int32? {
        guard let server = LoopbackSocket.connect(port: state.withLock { $0.upstreamPort }) else { return nil }
        guard track(server) else {
            close(server)
            return nil
        }
        return server
    }

    private func sendAll(_ socket: Int32, _ bytes: [UInt8]) -> Bool { LoopbackSocket.sendAll(socket, bytes) }

    /// `response` with its body sent whole after a `Content-Length` header.
    private func plain(_ response: HTTPMessage) -> HTTPMessage {
        var lines = headLines(response)
        lines.insert("Content-Length: \(response.body.count)", at: lines.count - 2)
        var plain = response
        plain.raw = Array(lines.joined(separator: "\r\n").utf8)
        plain.headLength = plain.raw.count
        plain.raw += response.body
        plain.isChunked = false
        return plain
    }

    /// The status line and headers of `response` without its framing headers, then two empty
    /// strings (joined with CRLF: the blank line that ends a head).
    private func headLines(_ response: HTTPMessage) -> [String] {
        let head = String(decoding: response.raw.prefix(response.headLength - 4), as: UTF8.self)
        return head.components(separatedBy: "\r\n").filter {
            let name = $0.lowercased()
            return !name.hasPrefix("content-length:") && !name.hasPrefix("transfer-encoding:")
        } + ["", ""]
    }

    /// `response` with its body sent in chunked encoding, in pieces of 1–300 bytes.
    private func rechunked(_ response: HTTPMessage) -> HTTPMessage {
        var lines = headLines(response)
        lines.insert("Transfer-Encoding: chunked", at: lines.count - 2)
        var raw = Array(lines.joined(separator: "\r\n").utf8)
        let headLength = raw.count
        var offset = 0
        while offset < response.body.count {
            let size = min(1 + random(below: 300), response.body.count - offset)
            raw += Array((String(size, radix: 16) + "\r\n").utf8) + response.body[offset..<offset + size] + [13, 10]
            offset += size
        }
        raw += Array("0\r\n\r\n".utf8)
        var chunked = response
        chunked.raw = raw
        chunked.headLength = headLength
        chunked.isChunked = true
        return chunked
    }
}

/// One HTTP/1.1 message as read from a socket: its bytes as they came, and the parts the proxy needs.
private struct HTTPMessage {
    var raw: [UInt8]
    /// Request method, or the response's status code as text.
    var method: String
    var target: String
    /// The body without chunk framing.
    var body: [UInt8]
    /// `Connection: close` was asked, or the body ends with the connection.
    var closes: Bool
    /// Bytes of `raw` up to and including the blank line after the headers.
    var headLength: Int
    /// Bytes of `raw` up to and including the status line's CRLF.
    var statusLineLength: Int
    var isChunked: Bool
}

/// Reads HTTP/1.1 messages from a blocking socket: head, then a body framed by Content-Length,
/// chunked encoding or (responses only) the end of the connection.
private final class SocketReader {
    private let socket: Int32
    private var buffer: [UInt8] = []
    private var raw: [UInt8] = []

    init(_ socket: Int32) { self.socket = socket }

    /// The next message, or nil when the connection closed or broke first.
    func readMessage(isResponse: Bool, requestMethod: String?) -> HTTPMessage? {
        raw = []
        guard let head = readHead() else { return nil }
        let headLength = raw.count
        let lines = String(decoding: head, as: UTF8.self).components(separatedBy: "\r\n")
        let first = lines[0].split(separator: " ", maxSplits: 2).map(String.init)
        guard first.count >= 2 else { return nil }
        var headers: [String: String] = [:]
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        var closes = headers["connection"]?.lowercased() == "close"
        let status = isResponse ? Int(first[1]) ?? 0 : 0
        var body: [UInt8] = []
        if isResponse && (requestMethod == "HEAD" || status / 100 == 1 || status == 204 || status == 304) {
            // no body
        } else if headers["transfer-encoding"]?.lowercased().contains("chunked") == true {
            guard let chunked = readChunked() else { return nil }
            body = chunked
        } else if let length = headers["content-length"].flatMap(Int.init) {
            guard let bytes = read(length) else { return nil }
            body = bytes
        } else if isResponse {
            while let more = fill() { buffer += more }
            body = take(buffer.count)
            closes = true
        }
        return HTTPMessage(
            raw: raw, method: isResponse ? first[1] : first[0], target: isResponse ? "" : first[1],
            body: body, closes: closes, headLength: headLength, statusLineLength: lines[0].utf8.count + 2,
            isChunked: headers["transfer-encoding"]?.lowercased().contains("chunked") == true)
    }

    private func readHead() -> [UInt8]? {
        while true {
            if let end = find([13, 10, 13, 10]) { return take(end + 4) }
            guard let more = fill() else { return nil }
            buffer += more
        }
    }

    private func readChunked() -> [UInt8]? {
        var body: [UInt8] = []
        while true {
            guard let line = readLine(), let size = Int(line.split(separator: ";")[0].trimmingCharacters(in: .whitespaces), radix: 16)
            else {
                return nil
            }
            if size == 0 {
                while let trailer = readLine() { if trailer.isEmpty { return body } }  // trailers end with an empty line
                return nil
            }
            guard let chunk = read(size), readLine() != nil else { return nil }
            body += chunk
        }
    }

    private func readLine() -> String? {
        while true {
            if let end = find([13, 10]) { return String(decoding: take(end + 2).dropLast(2), as: UTF8.self) }
            guard let more = fill() else { return nil }
            buffer += more
        }
    }

    private func read(_ count: Int) -> [UInt8]? {
        while buffer.count < count {
            guard let more = fill() else { return nil }
            buffer += more
        }
        return take(count)
    }

    /// Removes the first `count` buffered bytes, keeping them in `raw`.
    private func take(_ count: Int) -> [UInt8] {
        let bytes = Array(buffer[..<count])
        buffer.removeFirst(count)
        raw += bytes
        return bytes
    }

    private func find(_ pattern: [UInt8]) -> Int? { LoopbackSocket.firstIndex(of: pattern, in: buffer) }

    /// The next bytes from the socket; nil at its end or on an error.
    private func fill() -> [UInt8]? { LoopbackSocket.receive(socket) }
}
