import CouchetteBenchmarks
import Foundation
import Testing

@testable import Couchette

/// Blobs under stress (only with `COUCHETTE_STRESS=1`): processes killed with SIGKILL while
/// saving documents with blobs never leave a document whose blob is missing, and a 500 MB blob
/// is saved, streamed back and replicated with bounded anonymous memory.
@Suite(.serialized) struct BlobStressTests {
    static let stress = ProcessInfo.processInfo.environment["COUCHETTE_STRESS"] == "1"

    @Test(.enabled(if: stress)) func killedBlobWritersLeaveNoDocumentWithoutItsBlob() async throws {
        let tool = CrashTests.toolPath
        try #require(FileManager.default.isExecutableFile(atPath: tool), "build the couchette tool first: \(tool)")
        let directory = try TemporaryDirectory()
        var generator = SystemRandomNumberGenerator()
        var reportedTotal = 0
        for round in 0..<20 {
            let log = directory.path + "/round-\(round).log"
            let started = try await CrashTests.killWriter(
                tool, ["write-loop", directory.path, "blobcrash", "--prefix", "round\(round)", "--blobs"],
                log: log, after: .milliseconds(Int.random(in: 0...200, using: &generator)))
            try #require(started, "round \(round): the writer never reported a save")
            let reported = try CrashTests.reportedIDs(in: log)
            reportedTotal += reported.count
            let database = try directory.open("blobcrash")
            // Every referenced blob exists with its length and digest (the integrity check reads them all).
            try await database.performMaintenance(type: .integrityCheck)
            for id in reported {
                let blob = try #require(
                    try await database.defaultCollection().document(id: id)?.blob(forKey: "blob"), "round \(round): \(id)")
                #expect(try await blob.content().prefix(id.utf8.count) == Data(id.utf8))
            }
            if round % 5 == 4 {
                // Compaction removes what a kill left unreferenced, and nothing referenced.
                try await database.performMaintenance(type: .compact)
                try await database.performMaintenance(type: .integrityCheck)
            }
            try await database.close()
        }
        #expect(reportedTotal >= 20)
    }

    /// In process (`blob-500mb-memory`) and over loopback HTTP, pushed and pulled back as
    /// multipart (`blob-500mb-http-memory`).
    @Test(.enabled(if: stress), arguments: ["blob-500mb-memory", "blob-500mb-http-memory"])
    func aHalfGigabyteBlobCostsBoundedMemory(workload: String) async throws {
        // Its own process: the other suites' allocations would blur this one's RssAnon.
        let bench = URL(fileURLWithPath: CrashTests.toolPath).deletingLastPathComponent().appendingPathComponent("couchette-bench").path
        try #require(FileManager.default.isExecutableFile(atPath: bench), "build couchette-bench first: \(bench)")
        let directory = try TemporaryDirectory()
        let report = directory.path + "/memory.json"
        let child = Process()
        child.executableURL = URL(fileURLWithPath: bench)
        child.arguments = ["--filter", workload, "--size", "1000", "--runs", "1", "--json", report]
        child.currentDirectoryURL = URL(fileURLWithPath: directory.path)
        child.standardOutput = FileHandle.nullDevice
        try await startProcess(child)
        await waitForExit(child)
        #expect(child.terminationStatus == 0)
        let json = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: report))) as? [String: Any]
        let entries = try #require(json?["results"] as? [[String: Any]])
        let growth = try #require(entries.first { $0["workload"] as? String == workload }?["bytes"] as? Int)
        #expect(growth > 0 && growth < 64 << 20, "\(workload): RssAnon grew by \(growth) bytes")
    }
}
