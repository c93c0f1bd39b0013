import Foundation
import Testing

@testable import CouchetteBenchmarks

/// Every benchmark workload at a tiny size: each engine must end with exactly the same documents,
/// so the benchmark never compares engines doing different work.
@Suite struct BenchmarkSmokeTests {
    @Test(arguments: Workload.all.map(\.name))
    func everyEngineEndsWithTheSameDocuments(workload name: String) async throws {
        try await onAThreadOfItsOwn {
            let workload = try #require(Workload.all.first { $0.name == name })
            let directory = try TemporaryDirectory()
            var contents: [String: [String: String]] = [:]
            for engine in workload.engines {
                let context = WorkloadContext(size: 40, runs: 2, directory: directory.path + "/" + engine.name, captureContents: true)
                let result = try await workload.run(engine, context)
                #expect(result.samples.count == (workload.runsOnce ? 1 : 2))
                #expect(result.samples.allSatisfy { $0.ops > 0 })
                let captured: [String: String] = try #require(result.contents)
                contents[engine.name] = captured
            }
            if workload.isCouchetteOnly {
                // Change-feed workloads have no baseline: Couchette alone, with its documents written.
                #expect(contents.keys.sorted() == ["couchette"])
                #expect(contents["couchette"]?.isEmpty == false)
                return
            }
            let reference = try #require(contents["sqlite"])
            #expect(!reference.isEmpty)
            #expect(contents["couchette"] == reference)
            if workload.needsQueries {
                // Query workloads capture their results: SQLite and Couchette must give the same rows.
                #expect(contents.keys.sorted() == ["couchette", "sqlite"])
                #expect(reference.keys.contains { $0.hasPrefix("result") })
                return
            }
            #expect(contents["lmdb"] == reference)
        }
    }

    @Test func generatedDocumentsAreDeterministicAndShapedLikeTheFixture() throws {
        let first = DocumentGenerator().documents(count: 5)
        let second = DocumentGenerator().documents(count: 5)
        #expect(first.map(\.json) == second.map(\.json))
        #expect(first.map(\.id) == ["doc-0000000", "doc-0000001", "doc-0000002", "doc-0000003", "doc-0000004"])
        let object = try #require(try JSONSerialization.jsonObject(with: Data(first[0].json.utf8)) as? [String: Any])
        #expect(Set(object.keys) == ["name", "gender", "birthday", "contact", "likes", "memberSince", "visits"])
        #expect((object["contact"] as? [String: Any])?["address"] is [String: Any])
    }

    @Test func theTableShowsRatiosAgainstBothBaselines() {
        let entries = [
            BenchmarkRunner.Entry(
                workload: "bulk-insert", engine: "couchette", median_s: 1, min_s: 1, max_s: 1, ops: 10, peak_rss_bytes: 0),
            BenchmarkRunner.Entry(workload: "bulk-insert", engine: "sqlite", median_s: 2, min_s: 2, max_s: 2, ops: 10, peak_rss_bytes: 0),
            BenchmarkRunner.Entry(
                workload: "bulk-insert", engine: "lmdb", median_s: 0.5, min_s: 0.5, max_s: 0.5, ops: 10, peak_rss_bytes: 0),
        ]
        let table = BenchmarkRunner.table(entries, size: 10)
        #expect(table.contains("2.00×"))
        #expect(table.contains("0.50×"))
    }

    @Test func couchetteOnlyWorkloadsShowLatenciesAndNoBaselines() throws {
        #expect(
            Workload.all.filter(\.isCouchetteOnly).map(\.name) == [
                "changes-latency", "live-query-latency", "live-queries-8",
                "idle-cpu", "replicate-in-process", "replicate-in-process-pull",
                "replicate-http", "replicate-http-pull", "replicate-https", "revision-history-1000",
                "idle-replicator-cpu", "idle-replicator-cpu-longpoll",
                "blob-write", "blob-write-file", "blob-read", "blob-read-file",
                "replicate-attachments", "blob-500mb-memory", "blob-500mb-http-memory",
            ])
        let entry = BenchmarkRunner.Entry(
            workload: "changes-latency", engine: "couchette", median_s: 0.0001, min_s: 0.0001,
            max_s: 0.0001, ops: 1000, peak_rss_bytes: 0, p99_s: 0.0004)
        let table = BenchmarkRunner.table([entry], size: 10)
        let row = try #require(table.split(separator: "\n").first { $0.hasPrefix("changes-latency") })
        #expect(row.contains("100.0 µs median, 400.0 µs p99"))
        #expect(row.components(separatedBy: "—").count == 5, "sqlite, ratio, lmdb, ratio: \(row)")
        let history = BenchmarkRunner.Entry(
            workload: "revision-history-1000", engine: "couchette", median_s: 0, min_s: 0,
            max_s: 0, ops: 1001, peak_rss_bytes: 0, bytes: 21_021)
        #expect(BenchmarkRunner.table([history], size: 10).contains("20.5 KB (21.0 B/op)"))
    }
}
