import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Reads HTTP/1.1 messages from a blocking socket for ``CouchDBStyleProxy``: a request's head
/// and `Content-Length` body; a response's head and body (chunked, `Content-Length`, or up to
/// the end of the connection), the body without chunk framing.
final class MessageReader {
    struct Request {
        /// Request line and headers, without the blank line.
        let head: String
        let body: [UInt8]
    }

    struct Response {
        let status: Int
        /// Status line and headers.
        let headLines: [String]
        let body: [UInt8]
    }

    /// Longest head accepted: a longer one ends the connection.
    private static let maximumHead = 64 * 1024
    private let socket: Int32
    private var buffer: [UInt8] = []

    init(_ socket: Int32) {
        self.socket = socket
        var timeout = timeval(tv_sec: 120, tv_usec: 0)  // a silent peer cannot hold a thread forever
        setsockopt(socket, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    }

    func readRequest() -> Request? {
        guard let (lines, headers) = readHead() else { return nil }
        let length = headers["content-length"].flatMap(Int.init) ?? 0
        guard length >= 0, let body = read(length) else { return nil }
        return Request(head: lines.joined(separator: "\r\n"), body: body)
    }

    func readResponse() -> Response? {
        guard let (lines, headers) = readHead() else { return nil }
        let status = lines[0].split(separator: " ").dropFirst().first.flatMap { Int($0) } ?? 0
        let body: [UInt8]
        if headers["transfer-encoding"]?.lowercased().contains("chunked") == true {
            guard let chunked = readChunked() else { return nil }
            body = chunked
        } else if let length = headers["content-length"].flatMap(Int.init) {
            guard length >= 0, let bytes = read(length) else { return nil }
            body = bytes
        } else {
            while let more = fill() { buffer += more }
            body = buffer
            buffer = []
        }
        return Response(status: status, headLines: lines, body: body)
    }

    private func readHead() -> ([String], [String: String])? {
        while true {
            if let end = find([13, 10, 13, 10]) {
                let text = String(decoding: buffer[..<end], as: UTF8.self)
                buffer.removeFirst(end + 4)
                let lines = text.components(separatedBy: "\r\n")
                var headers: [String: String] = [:]
                for line in lines.dropFirst() {
                    guard let colon = line.firstIndex(of: ":") else { continue }
                    headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
                }
                return (lines, headers)
            }
            guard buffer.count < Self.maximumHead, let more = fill() else { return nil }
            buffer += more
        }
    }

    private func readChunked() -> [UInt8]? {
        var body: [UInt8] = []
        while true {
            guard let line = readLine(), let size = Int(line.split(separator: ";")[0].trimmingCharacters(in: .whitespaces), radix: 16),
                size >= 0
            else { return nil }
            if size == 0 {
                while let trailer = readLine(), !trailer.isEmpty {}
                return body
            }
            guard let chunk = read(size), readLine() != nil else { return nil }
            body += chunk
        }
    }

    private func readLine() -> String? {
        while true {
            if let end = find([13, 10]) {
                defer { buffer.removeFirst(end + 2) }
                return String(decoding: buffer[..<end], as: UTF8.self)
            }
            guard buffer.count < Self.maximumHead, let more = fill() else { return nil }
            buffer += more
        }
    }

    private func read(_ count: Int) -> [UInt8]? {
        while buffer.count < count {
            guard let more = fill() else { return nil }
            buffer += more
        }
        defer { buffer.removeFirst(count) }
        return Array(buffer[..<count])
    }

    private func find(_ pattern: [UInt8]) -> Int? { LoopbackSocket.firstIndex(of: pattern, in: buffer) }

    private func fill() -> [UInt8]? { LoopbackSocket.receive(socket) }
}
