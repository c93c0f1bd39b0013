import Foundation

/// What the disk under the benchmark charges for a durable commit: the time of `fdatasync` after
/// overwriting a few 4 KiB pages of a small file, measured in the folder the workloads use, at the
/// start and the end of a run.
///
/// The single-save workloads wait for a sync per commit (Couchette per group of saves), and on a
/// shared or virtual disk that price can double between one minute and the next. The probe puts
/// the price of the moment next to their figures, so that a row that moved with the disk can be
/// told from one that moved with the code. One page is the least a commit writes; eight scattered
/// pages are what one of Couchette's small group commits writes (its B-tree pages, the free-page
/// table and the meta page).
///
/// ```swift
/// let probe = try DiskSyncProbe.measure(in: NSTemporaryDirectory(), pages: 8, syncs: 500)
/// print(probe.p50_s)   // seconds, the median of 500 syncs
/// ```
public struct DiskSyncProbe: Codable, Sendable {
    /// When in the run it was taken: "start" or "end".
    public var when: String
    /// Pages overwritten before each sync.
    public var pages: Int
    /// Syncs timed.
    public var syncs: Int
    /// The median sync, in seconds (writes included).
    public var p50_s: Double
    /// The 90th percentile, in seconds.
    public var p90_s: Double

    /// Pages in the probe's file: 1 MiB, the span a small LMDB commit's pages fall within.
    static let filePages = 256
    static let pageSize = 4096

    /// Times `syncs` rounds of writing `pages` pages (scattered over a 1 MiB file, a different set
    /// each round) and `fdatasync`, in a file created in `directory` and removed afterwards.
    public static func measure(in directory: String, pages: Int, syncs: Int, when: String = "start") throws -> DiskSyncProbe {
        guard (1...filePages).contains(pages), syncs > 0 else {
            throw BenchmarkError.usage("disk sync probe: 1 to \(filePages) pages and at least one sync, got \(pages) and \(syncs)")
        }
        let path = directory + "/couchette-bench-sync-probe-\(UUID().uuidString)"
        let descriptor = open(path, O_RDWR | O_CREAT | O_EXCL, 0o600)
        guard descriptor >= 0 else { throw failure("creating \(path)") }
        defer {
            close(descriptor)
            unlink(path)
        }
        let page = [UInt8](repeating: 0xA5, count: pageSize)
        // The whole file written and synced first: the timed syncs overwrite allocated blocks, as
        // a commit into a file with headroom does, and never grow it.
        for index in 0..<filePages { try write(page, at: index, to: descriptor) }
        guard fdatasync(descriptor) == 0 else { throw failure("syncing \(path)") }
        var random = SplitMix64(seed: 7)
        var times: [Double] = []
        times.reserveCapacity(syncs)
        for _ in 0..<syncs {
            let chosen = (0..<filePages).shuffled(using: &random).prefix(pages).sorted()
            let start = ContinuousClock.now
            for index in chosen { try write(page, at: index, to: descriptor) }
            guard fdatasync(descriptor) == 0 else { throw failure("syncing \(path)") }
            times.append((ContinuousClock.now - start).inSeconds)
        }
        times.sort()
        return DiskSyncProbe(when: when, pages: pages, syncs: syncs, p50_s: times[times.count / 2], p90_s: times[times.count * 9 / 10])
    }

    private static func write(_ page: [UInt8], at index: Int, to descriptor: Int32) throws {
        let written = page.withUnsafeBytes { pwrite(descriptor, $0.baseAddress, $0.count, off_t(index * pageSize)) }
        guard written == pageSize else { throw failure("writing page \(index) of the probe file") }
    }

    private static func failure(_ action: String) -> BenchmarkError {
        .engine("disk sync probe: \(action) failed: \(String(cString: strerror(errno)))")
    }

    /// The line the table prints for a run's probes, e.g. "disk sync, 1 page: 110.0 µs median
    /// (160.0 µs p90) at start, 130.0 µs (…) at end".
    static func summary(_ probes: [DiskSyncProbe]) -> String {
        let lines = Dictionary(grouping: probes, by: \.pages).sorted { $0.key < $1.key }.map { pages, probes in
            let figures = probes.map {
                "\(BenchmarkRunner.duration($0.p50_s)) median (\(BenchmarkRunner.duration($0.p90_s)) p90) at \($0.when)"
            }
            return "Disk sync, \(pages) page\(pages == 1 ? "" : "s") + fdatasync: " + figures.joined(separator: ", ")
        }
        return lines.joined(separator: "\n")
    }
}
