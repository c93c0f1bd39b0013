#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Keeps zero-filled space in `data.mdb` ahead of the last page LMDB uses, so that a small
/// commit writes inside the file instead of growing it.
///
/// A commit that writes past the end of the file changes its size and allocates disk blocks, and
/// its `fdatasync` must then also write the inode and the allocation metadata: on this project's
/// ext4 test machine that was about 50 µs of a 150 µs sync (measured with alternating commits on
/// two files, one growing by a page per commit, one writing into zeros written ahead). Single
/// saves grow the file by about a page each, so most of them paid it.
///
/// The zeros are written (not `fallocate`d: writing into an unwritten extent changes metadata
/// too) at the start of a write transaction, while LMDB's writer lock is held and before the
/// transaction has written anything: every page past the last committed one is then unused by
/// every process and snapshot, so overwriting it with zeros is safe. The next commit's sync
/// carries them to disk. A crash leaves a longer file whose tail is zeros; LMDB never reads
/// past its last page, and ``DataFileCheck`` only refuses files that are too short.
///
/// Only small commits get headroom: when the file grew by more than ``largeGrowth`` since the
/// previous write transaction began (an import, a bulk insert), writing zeros first would double
/// the bytes written for the space those commits fill anyway.
struct FileHeadroom {
    /// The file's size as last seen or made; it only grows while the environment is open (LMDB
    /// never truncates; compaction replaces the file and resets this).
    private var knownSize = 0
    /// Where the used pages ended when the previous write transaction began.
    private var previousUsedEnd = 0

    /// Headroom is written in multiples of this, and at least this much.
    static let minimumStep = 64 << 10
    static let maximumStep = 1 << 20
    /// Growth between two write transactions above which no headroom is written.
    static let largeGrowth = 64 << 10

    /// How much headroom a file whose used pages end at `usedEnd` gets: a sixteenth of it, 64 KiB
    /// to 1 MiB (small databases, as in tests, stay small).
    static func step(usedEnd: Int) -> Int {
        let step = min(max(usedEnd / 16, minimumStep), maximumStep)
        return (step + minimumStep - 1) / minimumStep * minimumStep
    }

    /// The range to fill with zeros now, if any: called at the start of a write transaction with
    /// the end of the last committed page and the map size (the file never grows past the map,
    /// which the size limit bounds). `fileSize` is asked only when the known size is too short.
    mutating func extensionNeeded(usedEnd: Int, mapSize: Int, fileSize: () -> Int?) -> Range<Int>? {
        defer { previousUsedEnd = usedEnd }
        let growth = usedEnd - previousUsedEnd
        guard previousUsedEnd > 0, growth >= 0, growth <= Self.largeGrowth else { return nil }
        let step = Self.step(usedEnd: usedEnd)
        if knownSize >= usedEnd + step / 2 { return nil }
        guard let size = fileSize() else { return nil }
        knownSize = max(knownSize, size)
        if knownSize >= usedEnd + step / 2 { return nil }
        let target = min((usedEnd + step + Self.minimumStep - 1) / Self.minimumStep * Self.minimumStep, mapSize)
        let start = max(knownSize, usedEnd)
        return start < target ? start..<target : nil
    }

    /// Records that the file now reaches `end` (zeros written up to there).
    mutating func extended(to end: Int) {
        knownSize = max(knownSize, end)
    }

    /// Forgets what it knew: the file was replaced (compaction).
    mutating func reset() {
        knownSize = 0
        previousUsedEnd = 0
    }

    /// Writes zeros over `range` of the file `descriptor`; returns where the written zeros end
    /// (short of the range's end when the disk is full: the commit that follows then finds out).
    static func fillWithZeros(_ range: Range<Int>, descriptor: Int32) -> Int {
        var offset = range.lowerBound
        while offset < range.upperBound {
            let count = min(range.upperBound - offset, zeros.count)
            let written = zeros.withUnsafeBytes { pwrite(descriptor, $0.baseAddress, count, off_t(offset)) }
            if written <= 0 {
                if written < 0 && errno == EINTR { continue }
                break
            }
            offset += written
        }
        return offset
    }

    private static let zeros = [UInt8](repeating: 0, count: minimumStep)
}
