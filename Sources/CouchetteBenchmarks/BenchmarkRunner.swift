import Foundation

/// Runs workloads, each engine in a child process of its own (so memory peaks do not mix), and
/// reports medians side by side.
public enum BenchmarkRunner {
    /// One workload × engine result, as written to `--json`.
    public struct Entry: Codable, Sendable {
        public var workload: String
        public var engine: String
        public var median_s: Double
        public var min_s: Double
        public var max_s: Double
        public var ops: Int
        public var peak_rss_bytes: Int
        public var bytes: UInt64?
        /// Latency workloads: the 99th percentile (median_s is then the median latency).
        public var p99_s: Double?
        /// Couchette's single-save workloads: saves per commit (group commit), median of the runs.
        public var writes_per_commit: Double?
    }

    /// Child side: runs one workload for one engine and prints the entry as one JSON line.
    public static func runChild(workload name: String, engine engineName: String, size: Int, runs: Int) async throws {
        guard let workload = Workload.all.first(where: { $0.name == name }) else { throw BenchmarkError.usage("unknown workload \(name)") }
        guard let engine = Workload.engine(named: engineName) else { throw BenchmarkError.usage("unknown engine \(engineName)") }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("couchette-bench-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let sampler = MemorySampler()
        let result = try await workload.run(engine, WorkloadContext(size: size, runs: runs, directory: directory))
        let peak = sampler.stop()
        let times = result.samples.map(\.seconds).sorted()
        let entry = Entry(
            workload: name, engine: engineName, median_s: times[times.count / 2], min_s: times.first ?? 0,
            max_s: times.last ?? 0, ops: result.samples.first?.ops ?? 0, peak_rss_bytes: peak,
            bytes: result.samples.first?.bytes,
            p99_s: result.samples.compactMap(\.p99).sorted().dropFirst(result.samples.count / 2).first,
            writes_per_commit: result.samples.compactMap(\.writesPerCommit).sorted().dropFirst(result.samples.count / 2).first)
        let data = try JSONEncoder().encode(entry)
        print(String(decoding: data, as: UTF8.self))
    }

    /// Parent side: the disk's sync price (``DiskSyncProbe``: one page and eight scattered
    /// pages) in the folder the children write to, taken before the first workload or after the
    /// last (`when`).
    public static func probeDisk(when: String) throws -> [DiskSyncProbe] {
        let directory = FileManager.default.temporaryDirectory.path
        return try [1, 8].map { try DiskSyncProbe.measure(in: directory, pages: $0, syncs: 500, when: when) }
    }

    /// Parent side: spawns `executable --child …` for every workload and engine.
    public static func run(
        workloads: [Workload], size: Int, runs: Int, executable: String,
        progress: (String) -> Void
    ) throws -> [Entry] {
        var entries: [Entry] = []
        for workload in workloads {
            for engine in workload.engines {
                progress("running \(workload.name) on \(engine.name)…")
                let child = Process()
                child.executableURL = URL(fileURLWithPath: executable)
                child.arguments = ["--child", workload.name, "--engine", engine.name, "--size", "\(size)", "--runs", "\(runs)"]
                let output = Pipe()
                child.standardOutput = output
                try child.run()
                let data = output.fileHandleForReading.readDataToEndOfFile()
                child.waitUntilExit()
                guard child.terminationStatus == 0,
                    let line = String(decoding: data, as: UTF8.self).split(separator: "\n").last,
                    let entry = try? JSONDecoder().decode(Entry.self, from: Data(line.utf8))
                else {
                    throw BenchmarkError.engine("\(workload.name) on \(engine.name) failed (exit \(child.terminationStatus))")
                }
                entries.append(entry)
            }
        }
        return entries
    }

    // MARK: - Reporting

    /// The one-page table: each workload's Couchette figure next to SQLite's and raw LMDB's, with
    /// ratios (baseline time / Couchette time: above 1 means Couchette is faster; for disk size,
    /// baseline bytes / Couchette bytes).
    /// `disk`: the run's ``DiskSyncProbe`` figures, printed under the header.
    public static func table(_ entries: [Entry], size: Int, disk: [DiskSyncProbe] = []) -> String {
        func find(_ workload: String, _ engine: String) -> Entry? {
            entries.first { $0.workload == workload && $0.engine == engine }
        }
        func figure(_ entry: Entry?) -> String {
            guard let entry else { return "—" }
            if let bytes = entry.bytes {
                // Small sizes (one document's history) in KB, with the cost per op.
                if bytes < 1_048_576 && entry.ops > 1 {
                    return String(format: "%.1f KB (%.1f B/op)", Double(bytes) / 1024, Double(bytes) / Double(entry.ops))
                }
                return String(format: "%.1f MB", Double(bytes) / 1_048_576)
            }
            if let p99 = entry.p99_s { return "\(duration(entry.median_s)) median, \(duration(p99)) p99" }
            let perOp = entry.median_s / Double(max(entry.ops, 1))
            if let perCommit = entry.writes_per_commit {
                return "\(duration(entry.median_s)) (\(duration(perOp))/op, " + String(format: "%.1f saves/commit)", perCommit)
            }
            return "\(duration(entry.median_s)) (\(duration(perOp))/op)"
        }
        func ratio(_ baseline: Entry?, _ couchette: Entry?) -> String {
            guard let baseline, let couchette else { return "—" }
            if let b = baseline.bytes, let c = couchette.bytes, c > 0 { return String(format: "%.2f×", Double(b) / Double(c)) }
            guard couchette.median_s > 0 else { return "—" }
            return String(format: "%.2f×", baseline.median_s / couchette.median_s)
        }
        let header = ["workload", "ops", "couchette", "sqlite", "sqlite/couchette", "lmdb", "lmdb/couchette", "couchette peak anon"]
        var rows = [header]
        let workloads = entries.map(\.workload).reduce(into: [String]()) { if !$0.contains($1) { $0.append($1) } }
        for workload in workloads {
            let couchette = find(workload, "couchette")
            rows.append([
                workload, "\(couchette?.ops ?? 0)", figure(couchette), figure(find(workload, "sqlite")),
                ratio(find(workload, "sqlite"), couchette), figure(find(workload, "lmdb")),
                ratio(find(workload, "lmdb"), couchette),
                String(format: "%.1f MB", Double(couchette?.peak_rss_bytes ?? 0) / 1_048_576),
            ])
        }
        let widths = header.indices.map { column in rows.map { $0[column].count }.max() ?? 0 }
        var text =
            "Couchette benchmark — \(size) documents; median of runs; ratio = baseline time / Couchette time (> 1: Couchette faster)\n"
        text += "Couchette-only workloads (change feeds, live queries) have no baseline: \"—\"; latencies are per event\n"
        if !disk.isEmpty { text += DiskSyncProbe.summary(disk) + "\n" }
        for (index, row) in rows.enumerated() {
            text +=
                row.enumerated().map { $0.element.padding(toLength: widths[$0.offset], withPad: " ", startingAt: 0) }
                .joined(separator: "  ") + "\n"
            if index == 0 { text += widths.map { String(repeating: "-", count: $0) }.joined(separator: "  ") + "\n" }
        }
        return text
    }

    static func duration(_ seconds: Double) -> String {
        if seconds >= 1 { return String(format: "%.2f s", seconds) }
        if seconds >= 1e-3 { return String(format: "%.2f ms", seconds * 1e3) }
        return String(format: "%.1f µs", seconds * 1e6)
    }

    /// What the `--json` file records about this machine.
    public static func machine() -> [String: String] {
        var info = [
            "cores": "\(ProcessInfo.processInfo.activeProcessorCount)",
            "memory_bytes": "\(ProcessInfo.processInfo.physicalMemory)",
            "os": ProcessInfo.processInfo.operatingSystemVersionString,
        ]
        if let cpu = try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8),
            let model = cpu.split(separator: "\n").first(where: { $0.hasPrefix("model name") })
        {
            info["cpu"] = model.split(separator: ":").last.map { $0.trimmingCharacters(in: .whitespaces) }
        }
        return info
    }
}
