@_spi(Benchmarks) import Couchette
import Foundation

/// The single-save rows: one transaction per save, by one task or by eight at once, with and
/// without a full sync per commit. Couchette's figures carry how many saves each commit held
/// (group commit), read from the database's commit counters.
extension Workload {
    static let saves: [Workload] = [
        Workload(name: "single-save", summary: "save documents one transaction each, full sync (at most 500)") { engine, context in
            try await singleSaves(engine, context, count: min(context.size, 500), durable: true, writers: 1)
        },
        Workload(
            name: "single-save-default",
            summary: "save documents one transaction each, default sync (LMDB: MDB_NOMETASYNC; SQLite: WAL NORMAL; at most 500)"
        ) { engine, context in
            try await singleSaves(engine, context, count: min(context.size, 500), durable: false, writers: 1)
        },
        Workload(name: "single-save-concurrent", summary: "8 tasks saving one transaction each, default sync (at most 2000)") {
            engine, context in
            try await singleSaves(engine, context, count: min(context.size, 2000), durable: false, writers: 8)
        },
        Workload(
            name: "single-save-concurrent-full",
            summary: "the same 8 tasks; SQLite FULL and LMDB's full sync against Couchette's default (at most 2000)"
        ) { engine, context in
            // Couchette keeps its default (one data sync per group); the baselines sync every commit.
            try await singleSaves(engine, context, count: min(context.size, 2000), durable: !(engine is CouchetteEngine.Type), writers: 8)
        },
    ]

    private static func singleSaves(
        _ engine: any BenchmarkEngine.Type, _ context: WorkloadContext, count: Int,
        durable: Bool, writers: Int
    ) async throws -> WorkloadResult {
        let documents = DocumentGenerator().documents(count: count)
        return try await onFreshStores(engine, context, durable: durable) { store in
            let before = (store as? CouchetteEngine)?.database.commitTotals
            var sample = Sample(seconds: try await time { try await store.saveEach(documents, writers: writers) }, ops: documents.count)
            if let before, let after = (store as? CouchetteEngine)?.database.commitTotals, after.commits > before.commits {
                sample.writesPerCommit = Double(after.writes - before.writes) / Double(after.commits - before.commits)
            }
            return sample
        }
    }
}
