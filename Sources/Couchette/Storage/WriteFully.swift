#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Writes all of `bytes` to the open file `descriptor`, going on after short writes and
/// interrupted calls (`EINTR`), which `write(2)` may return at any time.
/// - Returns: nil once every byte is written, else the `errno` of the write that failed (callers
///   turn `ENOSPC` into `.full` and the rest into `.io`, naming their file).
func writeFully(_ descriptor: Int32, _ bytes: UnsafeRawBufferPointer) -> Int32? {
    var offset = 0
    while offset < bytes.count, let base = bytes.baseAddress {
        let written = write(descriptor, base + offset, bytes.count - offset)
        if written < 0 {
            if errno == EINTR { continue }
            return errno
        }
        offset += written
    }
    return nil
}
