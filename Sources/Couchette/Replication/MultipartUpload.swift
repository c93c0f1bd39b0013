import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A revision's `multipart/related` body (as ``MultipartDocumentWriter`` lays it out) read as
/// libcurl sends it: the delimiters and JSON part from memory, each attachment straight from its
/// file, so pushing a 500 MB blob costs a read buffer, not 500 MB.
///
/// ```swift
/// var request = HTTPClientRequest(method: "PUT", url: url)
/// request.upload = try MultipartUpload(json: json, following: following, boundary: boundary)
/// ```
final class MultipartUpload: HTTPUploadSource {
    private enum Segment {
        case bytes([UInt8])
        case file(path: String, length: UInt64)
    }

    private struct Position {
        var segment = 0
        var offset: UInt64 = 0
        var descriptor: Int32 = -1
    }

    let length: UInt64
    private let segments: [Segment]
    /// Taken only on the client's loop thread (see ``HTTPUploadSource``); the lock makes the
    /// class `Sendable` without an exemption.
    private let position = Locked(Position())
    /// Keeps staged files alive while they are sent.
    private let contents: [AttachmentContent]

    /// - Throws: `.invalidParameter` for content held in memory that is larger than announced.
    init(json: Value, following: [FollowingAttachment], boundary: String) throws {
        var segments: [Segment] = []
        var pending = Array("--\(boundary)\r\nContent-Type: application/json\r\n\r\n".utf8) + Array(JSON.string(from: json).utf8)
        for part in following {
            pending += Array(
                ("\r\n--\(boundary)\r\nContent-Disposition: attachment; filename=\(JSON.string(from: .string(part.name)))\r\n"
                    + "Content-Type: \(part.contentType)\r\nContent-Length: \(part.length)\r\n\r\n").utf8)
            switch part.content {
            case .data(let data):
                guard UInt64(data.count) == part.length else {
                    throw CouchetteError(.invalidParameter, "attachment '\(part.name)' has \(data.count) bytes, not \(part.length)")
                }
                pending += data
            case .file(let path):
                segments += [.bytes(pending), .file(path: path, length: part.length)]
                pending = []
            case .staged(let file):
                segments += [.bytes(pending), .file(path: file.path, length: part.length)]
                pending = []
            }
        }
        pending += Array("\r\n--\(boundary)--".utf8)
        segments.append(.bytes(pending))
        self.segments = segments
        self.contents = following.map(\.content)
        length = segments.reduce(0) { total, segment in
            switch segment {
            case .bytes(let bytes): total + UInt64(bytes.count)
            case .file(_, let length): total + length
            }
        }
    }

    deinit {
        position.withLock { if $0.descriptor >= 0 { close($0.descriptor) } }
    }

    func read(into buffer: UnsafeMutableRawBufferPointer) -> Int? {
        position.withLock { state -> Int? in
            while state.segment < segments.count {
                switch segments[state.segment] {
                case .bytes(let bytes):
                    let left = bytes.count - Int(state.offset)
                    if left > 0 {
                        let count = min(left, buffer.count)
                        bytes.withUnsafeBytes { source in
                            buffer.baseAddress!.copyMemory(from: source.baseAddress! + Int(state.offset), byteCount: count)
                        }
                        state.offset += UInt64(count)
                        return count
                    }
                case .file(let path, let length):
                    if state.offset < length {
                        if state.descriptor < 0 {
                            state.descriptor = open(path, O_RDONLY | O_CLOEXEC)
                            guard state.descriptor >= 0 else { return nil }
                        }
                        let wanted = Int(min(UInt64(buffer.count), length - state.offset))
                        let count = readFile(state.descriptor, buffer.baseAddress, wanted)
                        // A file that ends early (or fails) aborts the request: the length was announced.
                        guard count > 0 else { return nil }
                        state.offset += UInt64(count)
                        return count
                    }
                    if state.descriptor >= 0 {
                        close(state.descriptor)
                        state.descriptor = -1
                    }
                }
                state.segment += 1
                state.offset = 0
            }
            return 0
        }
    }

    func rewind() -> Bool {
        position.withLock { state in
            if state.descriptor >= 0 { close(state.descriptor) }
            state = Position()
        }
        return true
    }
}

/// POSIX `read`, which the method of the same name hides inside the class.
private func readFile(_ descriptor: Int32, _ buffer: UnsafeMutableRawPointer?, _ count: Int) -> Int {
    while true {
        let result = read(descriptor, buffer, count)
        if result < 0, errno == EINTR { continue }
        return result
    }
}
