import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Blocking TCP sockets on 127.0.0.1, for the loopback servers and proxies of the benchmark
/// (``CouchDBStyleProxy``) and of the tests (fault proxy, scripted servers).
enum LoopbackSocket {
    /// A socket listening on an ephemeral loopback port.
    static func listen(backlog: Int32 = 64) throws -> (socket: Int32, port: UInt16) {
        let (listening, port) = try bound()
        guard Glibc.listen(listening, backlog) == 0 else {
            let failure = errno
            close(listening)
            throw BenchmarkError.engine("cannot listen on loopback (errno \(failure))")
        }
        return (listening, port)
    }

    /// A socket bound to an ephemeral loopback port and not listening: connecting to the port is
    /// refused for as long as the socket stays open, and no other server can take the port
    /// (tests use it for a server that is down).
    static func bound() throws -> (socket: Int32, port: UInt16) {
        let socket = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = self.address(port: 0)
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
                bind(socket, pointer, length) == 0 && getsockname(socket, pointer, &length) == 0
            }
        }
        guard socket >= 0, bound else {
            let failure = errno
            if socket >= 0 { close(socket) }
            throw BenchmarkError.engine("cannot bind a loopback port (errno \(failure))")
        }
        return (socket, UInt16(bigEndian: address.sin_port))
    }

    /// The next connection to `listening`; nil once it was shut down.
    static func accept(_ listening: Int32) -> Int32? {
        while true {
            let connection = Glibc.accept(listening, nil, nil)
            if connection >= 0 { return connection }
            if errno != EINTR { return nil }
        }
    }

    /// A socket connected to 127.0.0.1:`port`, or nil.
    static func connect(port: UInt16) -> Int32? {
        let connection = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard connection >= 0 else { return nil }
        var address = self.address(port: port)
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(connection, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard connected == 0 else {
            close(connection)
            return nil
        }
        return connection
    }

    /// A non-blocking socket whose connection to 127.0.0.1:`port` was started, not waited for
    /// (tests fill a listening socket's accept queue with these), or nil.
    static func startConnecting(port: UInt16) -> Int32? {
        let connection = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard connection >= 0 else { return nil }
        _ = fcntl(connection, F_SETFL, fcntl(connection, F_GETFL) | O_NONBLOCK)
        var address = self.address(port: port)
        let started = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(connection, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard started == 0 || errno == EINPROGRESS else {
            close(connection)
            return nil
        }
        return connection
    }

    /// Writes all of `bytes`; false when the connection broke.
    static func sendAll(_ socket: Int32, _ bytes: [UInt8]) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let sent = bytes[offset...].withUnsafeBytes { send(socket, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if sent < 0 && errno == EINTR { continue }
            if sent <= 0 { return false }
            offset += sent
        }
        return true
    }

    /// The next bytes from `socket`; nil at its end or on an error (a receive timeout included).
    static func receive(_ socket: Int32) -> [UInt8]? {
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = recv(socket, &chunk, chunk.count, 0)
            if count < 0 && errno == EINTR { continue }
            return count > 0 ? Array(chunk[..<count]) : nil
        }
    }

    /// Where `pattern` first occurs in `buffer`.
    static func firstIndex(of pattern: [UInt8], in buffer: [UInt8]) -> Int? {
        guard buffer.count >= pattern.count else { return nil }
        for start in 0...(buffer.count - pattern.count) where buffer[start..<(start + pattern.count)].elementsEqual(pattern) {
            return start
        }
        return nil
    }

    private static func address(port: UInt16) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return address
    }
}
