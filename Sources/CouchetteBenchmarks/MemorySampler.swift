import Foundation
import Synchronization

/// Samples this process's anonymous resident memory (`RssAnon` in `/proc/self/status`) on a
/// background thread and keeps the peak. LMDB's file-backed mapped pages are not counted: they
/// are page cache, not heap.
public final class MemorySampler: Sendable {
    private let peak = Atomic<Int>(0)
    private let running = Atomic<Bool>(true)

    /// The CPU time every sampler's thread has used so far, in nanoseconds: reading
    /// `/proc/self/status` a hundred times a second costs more than an idle database, so the idle
    /// CPU workloads subtract it (see ``ChangeWorkloads/cpuSeconds(idling:)``).
    static let samplingCPUNanoseconds = Atomic<UInt64>(0)

    public init(interval: Double = 0.01) {
        let thread = Thread { [self] in
            var used = Self.threadCPUNanoseconds()
            while running.load(ordering: .relaxed) {
                sample()
                let now = Self.threadCPUNanoseconds()
                Self.samplingCPUNanoseconds.add(now &- used, ordering: .relaxed)
                used = now
                Thread.sleep(forTimeInterval: interval)
            }
        }
        thread.start()
    }

    /// The CPU time the calling thread has used, in nanoseconds.
    private static func threadCPUNanoseconds() -> UInt64 {
        var time = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &time)
        return UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_nsec)
    }

    /// Takes one last sample and stops; returns the peak in bytes.
    public func stop() -> Int {
        sample()
        running.store(false, ordering: .relaxed)
        return peak.load(ordering: .relaxed)
    }

    private func sample() {
        let current = Self.anonymousResidentBytes()
        var observed = peak.load(ordering: .relaxed)
        while current > observed {
            let (exchanged, original) = peak.compareExchange(expected: observed, desired: current, ordering: .relaxed)
            if exchanged { break }
            observed = original
        }
    }

    /// Reads `RssAnon` with one read into a fixed buffer: cheap enough to sample often without
    /// taking CPU from the workload being measured.
    static func anonymousResidentBytes() -> Int {
        let descriptor = open("/proc/self/status", O_RDONLY)
        guard descriptor >= 0 else { return 0 }
        defer { close(descriptor) }
        var buffer = [UInt8](repeating: 0, count: 4096)
        let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
        guard count > 0 else { return 0 }
        let label = Array("RssAnon:".utf8)
        var index = 0
        while index + label.count < count {
            if buffer[index] == label[0], Array(buffer[index..<(index + label.count)]) == label {
                var position = index + label.count
                var kilobytes = 0
                while position < count, buffer[position] == 0x20 || buffer[position] == 0x09 { position += 1 }
                while position < count, (0x30...0x39).contains(buffer[position]) {
                    kilobytes = kilobytes * 10 + Int(buffer[position] - 0x30)
                    position += 1
                }
                return kilobytes * 1024
            }
            index += 1
        }
        return 0
    }
}
