import Foundation
import Testing

@testable import CouchetteBenchmarks

/// The benchmark's disk probe: real writes and syncs in a real folder, its file gone afterwards,
/// its figures in the table; bad arguments refused.
@Suite struct DiskSyncProbeTests {
    @Test func measuresSyncsInTheFolderAndLeavesNothingBehind() throws {
        let directory = try TemporaryDirectory()
        let probe = try DiskSyncProbe.measure(in: directory.path, pages: 8, syncs: 20, when: "end")
        #expect(probe.pages == 8 && probe.syncs == 20 && probe.when == "end")
        #expect(probe.p50_s > 0 && probe.p50_s <= probe.p90_s)
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path).isEmpty)
    }

    @Test func refusesImpossibleProbesAndMissingFolders() {
        #expect(throws: BenchmarkError.self) { try DiskSyncProbe.measure(in: NSTemporaryDirectory(), pages: 0, syncs: 10) }
        #expect(throws: BenchmarkError.self) { try DiskSyncProbe.measure(in: NSTemporaryDirectory(), pages: 257, syncs: 10) }
        #expect(throws: BenchmarkError.self) { try DiskSyncProbe.measure(in: "/nonexistent-\(UUID().uuidString)", pages: 1, syncs: 1) }
    }

    @Test func theTablePrintsEachProbeUnderItsHeader() throws {
        let probes = [
            DiskSyncProbe(when: "start", pages: 1, syncs: 500, p50_s: 0.000_110, p90_s: 0.000_160),
            DiskSyncProbe(when: "start", pages: 8, syncs: 500, p50_s: 0.000_200, p90_s: 0.000_300),
            DiskSyncProbe(when: "end", pages: 1, syncs: 500, p50_s: 0.000_220, p90_s: 0.000_400),
            DiskSyncProbe(when: "end", pages: 8, syncs: 500, p50_s: 0.000_350, p90_s: 0.000_600),
        ]
        let entry = BenchmarkRunner.Entry(
            workload: "single-save", engine: "couchette", median_s: 1, min_s: 1, max_s: 1, ops: 10, peak_rss_bytes: 0)
        let lines = BenchmarkRunner.table([entry], size: 10, disk: probes).split(separator: "\n")
        #expect(
            lines.contains("Disk sync, 1 page + fdatasync: 110.0 µs median (160.0 µs p90) at start, 220.0 µs median (400.0 µs p90) at end"))
        #expect(
            lines.contains("Disk sync, 8 pages + fdatasync: 200.0 µs median (300.0 µs p90) at start, 350.0 µs median (600.0 µs p90) at end")
        )
        #expect(!BenchmarkRunner.table([entry], size: 10).contains("Disk sync"))
    }
}
