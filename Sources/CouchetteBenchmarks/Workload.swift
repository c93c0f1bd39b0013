import Foundation

/// One timed measurement.
public struct Sample: Sendable {
    public var seconds: Double
    public var ops: Int
    /// For size workloads: the bytes measured (seconds is 0).
    public var bytes: UInt64?
    /// For latency workloads: the 99th percentile (seconds is the median, ops the events timed).
    public var p99: Double?
    /// For Couchette's single-save workloads: the pending writes each commit carried, on average.
    public var writesPerCommit: Double?
}

/// What a workload run produced: one sample per run, and optionally the final documents.
public struct WorkloadResult: Sendable {
    public var samples: [Sample]
    public var contents: [String: String]?
}

/// The inputs of a workload run.
public struct WorkloadContext: Sendable {
    public var size: Int
    public var runs: Int
    /// A scratch folder; each run gets a fresh subfolder where it needs an empty store.
    public var directory: String
    /// Also return every stored document at the end (the smoke test compares engines with it).
    public var captureContents: Bool

    public init(size: Int, runs: Int, directory: String, captureContents: Bool = false) {
        self.size = size
        self.runs = runs
        self.directory = directory
        self.captureContents = captureContents
    }
}

/// A named benchmark workload, runnable against every engine.
public struct Workload: Sendable {
    public let name: String
    public let summary: String
    /// True for Couchette-only workloads (change feeds, live queries): the baselines have no
    /// equivalent, so only Couchette runs and their columns show "—".
    public let isCouchetteOnly: Bool
    /// True for query workloads: raw LMDB has no query language, so its column shows "—".
    public let needsQueries: Bool
    /// True for workloads measured once whatever `--runs` says (a size, or a long import).
    public let runsOnce: Bool
    let body: @Sendable (any BenchmarkEngine.Type, WorkloadContext) async throws -> WorkloadResult

    init(
        name: String, summary: String, isCouchetteOnly: Bool = false, needsQueries: Bool = false, runsOnce: Bool = false,
        body: @escaping @Sendable (any BenchmarkEngine.Type, WorkloadContext) async throws -> WorkloadResult
    ) {
        self.name = name
        self.summary = summary
        self.isCouchetteOnly = isCouchetteOnly
        self.needsQueries = needsQueries
        self.runsOnce = runsOnce
        self.body = body
    }

    /// The engines this workload runs on.
    public var engines: [any BenchmarkEngine.Type] {
        if isCouchetteOnly { return [CouchetteEngine.self] }
        return needsQueries ? Self.engines.filter { $0 is any QueryBenchmarkEngine.Type } : Self.engines
    }

    public func run(_ engine: any BenchmarkEngine.Type, _ context: WorkloadContext) async throws -> WorkloadResult {
        try await body(engine, context)
    }

    public static var engines: [any BenchmarkEngine.Type] { [CouchetteEngine.self, SQLiteEngine.self, LMDBEngine.self] }

    public static func engine(named name: String) -> (any BenchmarkEngine.Type)? {
        engines.first { $0.name == name }
    }

    public static let all: [Workload] =
        Array(comparative.prefix(1)) + saves + comparative.dropFirst() + scale + queries + fullText + changeFeeds + replication + blobs

    static let comparative: [Workload] = [
        Workload(name: "bulk-insert", summary: "insert N documents in one transaction (durable)") { engine, context in
            let documents = DocumentGenerator().documents(count: context.size)
            return try await onFreshStores(engine, context, durable: true) { store in
                Sample(seconds: try await time { try await store.insertAll(documents) }, ops: documents.count)
            }
        },
        Workload(name: "point-read", summary: "read documents by id in random order, decoded to dictionaries") { engine, context in
            let documents = DocumentGenerator().documents(count: context.size)
            var random = SplitMix64(seed: 42)
            let ids = documents.map(\.id).shuffled(using: &random)
            return try await onLoadedStore(engine, context, durable: false, load: { try await $0.insertAll(documents) }) { store in
                Sample(seconds: try await time { _ = try await store.readEach(ids) }, ops: ids.count)
            }
        },
        Workload(name: "update", summary: "increment a field of 10% of the documents in one transaction") { engine, context in
            let documents = DocumentGenerator().documents(count: context.size)
            let chosen = stride(from: 0, to: documents.count, by: 10).map { documents[$0] }
            var current = Dictionary(uniqueKeysWithValues: chosen.map { ($0.id, $0.json) })
            return try await onLoadedStore(engine, context, durable: true, load: { try await $0.insertAll(documents) }) { store in
                current = current.mapValues(incrementVisits)  // pre-encoded bytes for the raw LMDB floor
                let updated = current
                return Sample(
                    seconds: try await time { try await store.incrementVisits(chosen.map(\.id), updated: updated) },
                    ops: chosen.count)
            }
        },
        Workload(name: "iterate", summary: "read every document, each decoded to a dictionary") { engine, context in
            let documents = DocumentGenerator().documents(count: context.size)
            return try await onLoadedStore(engine, context, durable: false, load: { try await $0.insertAll(documents) }) { store in
                var seen = 0
                let seconds = try await time { seen = try await store.iterateAll() }
                guard seen == documents.count else { throw BenchmarkError.engine("\(engine.name) iterated \(seen) of \(documents.count)") }
                return Sample(seconds: seconds, ops: seen)
            }
        },
        Workload(name: "codable-save", summary: "save N TodoTask models in one transaction (SQLite, LMDB: JSONEncoder)") {
            engine, context in
            try await saveTasks(engine, context) { store, tasks in try await store.saveModels(tasks) }
        },
        Workload(name: "document-save", summary: "the same tasks as plain documents, no Codable (SQLite, LMDB: JSONSerialization)") {
            engine, context in
            try await saveTasks(engine, context) { store, tasks in try await store.saveTaskDocuments(tasks) }
        },
        Workload(name: "codable-read", summary: "read N TodoTask models by id in random order (SQLite, LMDB: JSONDecoder)") {
            engine, context in
            let tasks = BenchTask.generate(count: context.size)
            var random = SplitMix64(seed: 42)
            let ids = tasks.compactMap(\.id).shuffled(using: &random)
            let expected = tasks.reduce(0) { $0 + $1.priority }
            return try await onLoadedStore(engine, context, durable: false, load: { try await $0.saveModels(tasks) }) { store in
                var total = 0
                let seconds = try await time { total = try await store.readModels(ids) }
                guard total == expected else { throw BenchmarkError.engine("\(engine.name) read wrong priorities") }
                return Sample(seconds: seconds, ops: ids.count)
            }
        },
        Workload(name: "disk-size", summary: "bytes on disk after inserting N documents", runsOnce: true) { engine, context in
            let documents = DocumentGenerator().documents(count: context.size)
            let store = try await engine.init(directory: try freshFolder(context, 0), durable: false)
            try await store.insertAll(documents)
            let bytes = try store.diskSize()
            let contents = context.captureContents ? try await store.contents() : nil
            try await store.close()
            return WorkloadResult(samples: [Sample(seconds: 0, ops: documents.count, bytes: bytes)], contents: contents)
        },
    ]

    private static func saveTasks(
        _ engine: any BenchmarkEngine.Type, _ context: WorkloadContext,
        _ save: (any BenchmarkEngine, [BenchTask]) async throws -> Void
    ) async throws -> WorkloadResult {
        try await onFreshStores(engine, context, durable: true) { store in
            let tasks = BenchTask.generate(count: context.size)  // fresh objects: saving binds them
            return Sample(seconds: try await time { try await save(store, tasks) }, ops: tasks.count)
        }
    }

    /// Runs `measure` once per run, each time on a new, empty store.
    static func onFreshStores(
        _ engine: any BenchmarkEngine.Type, _ context: WorkloadContext, durable: Bool,
        _ measure: (any BenchmarkEngine) async throws -> Sample
    ) async throws -> WorkloadResult {
        var samples: [Sample] = []
        var contents: [String: String]?
        for run in 0..<context.runs {
            let store = try await engine.init(directory: try freshFolder(context, run), durable: durable)
            samples.append(try await measure(store))
            if context.captureContents && run == context.runs - 1 { contents = try await store.contents() }
            try await store.close()
        }
        return WorkloadResult(samples: samples, contents: contents)
    }

    /// Opens one store, fills it with `load` (not timed), then runs `measure` once per run on it.
    static func onLoadedStore(
        _ engine: any BenchmarkEngine.Type, _ context: WorkloadContext, durable: Bool,
        load: (any BenchmarkEngine) async throws -> Void,
        _ measure: (any BenchmarkEngine) async throws -> Sample
    ) async throws -> WorkloadResult {
        let store = try await engine.init(directory: try freshFolder(context, 0), durable: durable)
        try await load(store)
        var samples: [Sample] = []
        for _ in 0..<context.runs { samples.append(try await measure(store)) }
        let contents = context.captureContents ? try await store.contents() : nil
        try await store.close()
        return WorkloadResult(samples: samples, contents: contents)
    }

    static func incrementVisits(_ json: String) -> String {
        guard var object = (try? JSONSerialization.jsonObject(with: Data(json.utf8))) as? [String: Any] else { return json }
        object["visits"] = ((object["visits"] as? Int) ?? 0) + 1
        return canonicalJSON(object)
    }

    static func freshFolder(_ context: WorkloadContext, _ run: Int) throws -> String {
        let folder = context.directory + "/run-\(run)-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        return folder
    }

    static func time(_ body: () async throws -> Void) async throws -> Double {
        let start = ContinuousClock.now
        try await body()
        let elapsed = ContinuousClock.now - start
        return elapsed.inSeconds
    }
}
