import CouchetteBenchmarks
import Foundation

/// `couchette-bench`: Couchette against raw LMDB and SQLite, measured side by side.
@main
enum BenchCommand {
    static let usage = """
        Usage: couchette-bench [--list] [--filter NAME] [--size N] [--runs N] [--json FILE]

          --list          list the workloads and exit
          --filter NAME   run only workloads whose name contains NAME
          --size N        documents per workload (default 100000)
          --runs N        timed runs per workload and engine (default 5); the median is reported
          --json FILE     also write machine-readable results to FILE
        """

    static func main() async {
        do {
            try await run(Array(CommandLine.arguments.dropFirst()))
        } catch {
            FileHandle.standardError.write(Data("couchette-bench: \(error)\n".utf8))
            exit(1)
        }
    }

    static func run(_ arguments: [String]) async throws {
        var options: [String: String] = [:]
        var flags: Set<String> = []
        var index = 0
        while index < arguments.count {
            let argument = arguments[index]
            switch argument {
            case "--list", "--help", "-h": flags.insert(argument)
            case "--filter", "--size", "--runs", "--json", "--child", "--engine":
                guard index + 1 < arguments.count else { throw UsageError("\(argument) needs a value\n\(usage)") }
                options[argument] = arguments[index + 1]
                index += 1
            default: throw UsageError("unknown argument \(argument)\n\(usage)")
            }
            index += 1
        }
        if flags.contains("--help") || flags.contains("-h") {
            print(usage)
            return
        }
        if flags.contains("--list") {
            let width = (Workload.all.map(\.name.count).max() ?? 0) + 2
            for workload in Workload.all { print(workload.name.padding(toLength: width, withPad: " ", startingAt: 0) + workload.summary) }
            return
        }
        guard let size = Int(options["--size"] ?? "100000"), size > 0 else { throw UsageError("--size must be a positive integer") }
        guard let runs = Int(options["--runs"] ?? "5"), runs > 0 else { throw UsageError("--runs must be a positive integer") }
        if let child = options["--child"] {
            try await BenchmarkRunner.runChild(workload: child, engine: options["--engine"] ?? "", size: size, runs: runs)
            return
        }
        let workloads = Workload.all.filter { options["--filter"].map($0.name.contains) ?? true }
        guard !workloads.isEmpty else { throw UsageError("no workload matches '\(options["--filter"] ?? "")'") }
        let executable = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().path
        let progress = { (message: String) in FileHandle.standardError.write(Data("\(message)\n".utf8)) }
        progress("measuring the disk's sync time…")
        var disk = try BenchmarkRunner.probeDisk(when: "start")
        let entries = try BenchmarkRunner.run(workloads: workloads, size: size, runs: runs, executable: executable, progress: progress)
        progress("measuring the disk's sync time again…")
        disk += try BenchmarkRunner.probeDisk(when: "end")
        print(BenchmarkRunner.table(entries, size: size, disk: disk))
        if let path = options["--json"] {
            let report = Report(machine: BenchmarkRunner.machine(), size: size, disk_sync: disk, results: entries)
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
            try encoder.encode(report).write(to: URL(fileURLWithPath: path))
        }
    }

    struct Report: Encodable {
        let machine: [String: String]
        let size: Int
        /// The disk's sync time at the start and end of the run (``DiskSyncProbe``).
        let disk_sync: [DiskSyncProbe]
        let results: [BenchmarkRunner.Entry]
    }

    struct UsageError: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }
}
