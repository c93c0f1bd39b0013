import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Reads a file in ``BlobStore/chunkSize`` pieces, so no content is ever held whole.
final class BlobReader {
    private var descriptor: Int32
    let path: String

    /// - Throws: `.notFound` when the file does not exist, `.io` when it cannot be opened.
    init(path: String) throws {
        self.path = path
        descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else {
            let code: CouchetteError.Code = errno == ENOENT ? .notFound : .io
            throw CouchetteError(code, "cannot open \(path): \(String(cString: strerror(errno)))")
        }
    }

    deinit { close() }

    func close() {
        if descriptor >= 0 { Glibc.close(descriptor) }
        descriptor = -1
    }

    /// The next chunk, or nil at the end of the file.
    func next() throws -> Data? {
        guard descriptor >= 0 else { return nil }
        var buffer = Data(count: BlobStore.chunkSize)
        let count = try buffer.withUnsafeMutableBytes { raw -> Int in
            while true {
                let read = Glibc.read(descriptor, raw.baseAddress, raw.count)
                if read >= 0 { return read }
                if errno != EINTR { throw CouchetteError(.io, "cannot read \(path): \(String(cString: strerror(errno)))") }
            }
        }
        if count == 0 {
            close()
            return nil
        }
        buffer.count = count
        return buffer
    }

    /// Calls `body` with each chunk in order.
    func forEachChunk(_ body: (UnsafeRawBufferPointer) throws -> Void) throws {
        while let chunk = try next() { try chunk.withUnsafeBytes(body) }
    }
}
