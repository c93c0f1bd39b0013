import Foundation
import Synchronization

/// Samples this process's anonymous resident memory (`RssAnon` in `/proc/self/status`) on a
/// background thread and keeps the peak. LMDB's file-backed mapped pages are not counted: they
/// are page cache, not heap.
public final class MemorySampler: Sendable {
    private let peak = Atomic<Int>(0)
    private let running = Atomic<Bool>(true)

    public init(interval: Double = 0.002) {
        let thread = Thread { [self] in
            while running.load(ordering: .relaxed) {
                sample()
                Thread.sleep(forTimeInterval: interval)
            }
        }
        thread.start()
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

    static func anonymousResidentBytes() -> Int {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return 0 }
        for line in status.split(separator: "\n") where line.hasPrefix("RssAnon:") {
            let kilobytes = line.split(separator: " ").dropFirst().first.flatMap { Int($0) } ?? 0
            return kilobytes * 1024
        }
        return 0
    }
}
