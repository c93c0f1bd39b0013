#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The bodies of one run of JSON documents (``JSONDocumentBatch``), one after another, at an
/// address that never moves: the caller appends finished bodies while ``BodyDigester`` hashes the
/// earlier ones on another thread.
///
/// A buffer never grows: when a body does not fit, the builder copies what it holds into a
/// larger one, and the old one lives on as long as a digest job still reads it.
final class BodyBuffer {
    let base: UnsafeMutableRawPointer
    let capacity: Int
    /// How far the pages ahead of the writing position were asked to be mapped (see
    /// ``prepare(upTo:)``).
    private var prepared: Int

    /// Pages are mapped this far ahead of the bodies written, off the caller's thread.
    static let preparedAhead = 256 << 10
    private static let pageSize = max(4096, Int(sysconf(Int32(_SC_PAGESIZE))))

    init(capacity: Int) {
        self.capacity = max(capacity, 1)
        base = .allocate(byteCount: self.capacity, alignment: Self.pageSize)
        prepared = 0
    }

    deinit { base.deallocate() }

    /// The bytes `range`, which the owner finished writing.
    func bytes(_ range: Range<Int>) -> UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(start: base + range.lowerBound, count: range.count)
    }

    /// The page-aligned range, past what was prepared so far, that should be mapped before the
    /// owner's writes reach `end` plus ``preparedAhead``; nil when it is prepared already. Fresh
    /// memory page-faults on its first write, a tenth of the transcoding time in a large import:
    /// the digest thread maps the pages ahead instead (``populate(_:)``), while the caller
    /// transcodes.
    func rangeToPrepare(upTo end: Int) -> Range<Int>? {
        let target = min(capacity, end + Self.preparedAhead) & ~(Self.pageSize - 1)
        guard target > prepared + Self.preparedAhead / 2 else { return nil }
        defer { prepared = target }
        return (prepared & ~(Self.pageSize - 1))..<target
    }

    /// Maps the pages of `range` (page-aligned, from ``rangeToPrepare(upTo:)``) without changing
    /// their contents, so that the owner's first writes to them do not fault. Safe while the owner
    /// writes to them: the kernel only fills in page tables (`MADV_POPULATE_WRITE`, Linux 5.14);
    /// where it is not supported nothing happens.
    func populate(_ range: Range<Int>) {
        #if os(Linux)
        _ = madvise(base + range.lowerBound, range.count, 23)  // MADV_POPULATE_WRITE
        #endif
    }
}

// @unchecked: the owner (one `JSONDocumentBatch.Builder`, on the caller's thread) writes only past
// every range it has handed to a digest job, and hands a range over through a dispatch queue
// (which orders those writes before the job's reads); the writer thread reads the buffer after the
// batch crossed the write queue's lock and the digest jobs finished. `prepared` is only touched by
// the owner. `populate` changes no byte.
extension BodyBuffer: @unchecked Sendable {}
