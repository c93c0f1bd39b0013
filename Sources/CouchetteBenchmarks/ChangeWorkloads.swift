import Couchette
import Foundation

/// Couchette-only workloads: how fast commits reach change feeds and live queries. SQLite and raw
/// LMDB have no change feeds, so these run on Couchette alone and the table shows "—" for them.
///
/// Latencies are measured from the `save()` call to the event arriving in a `for await` loop of
/// another task, one save at a time (the next save starts once the event arrived), so they
/// include the commit itself: an upper bound of commit → event.
extension Workload {
    static let changeFeeds: [Workload] = [
        Workload(
            name: "changes-latency",
            summary: "save() → collection.changes() event in a for await loop, median and p99 (at most 1,000 saves)",
            isCouchetteOnly: true
        ) { _, context in
            let count = min(context.size, 1000)
            return try await latencyRuns(context) { engine in
                let stream = engine.collection.changes()
                let arrivals = relay(stream) { _ in true }
                return try await timeSaves(count, into: engine, arrivals: arrivals) { MutableDocument(id: "saved-\($0)") }
            }
        },
        Workload(
            name: "live-query-latency",
            summary: "save() → live query event, indexed query over N (at most 10,000) documents, median and p99 (at most 1,000 saves)",
            isCouchetteOnly: true
        ) { _, context in
            let documents = DocumentGenerator().documents(count: min(context.size, 10_000))
            let count = min(context.size, 1000)
            return try await latencyRuns(context) { engine in
                try await engine.insertAll(documents)
                // The query filters on an indexed property: each re-run reads the index, not N documents.
                try await engine.collection.createIndex(withName: "by-marked", config: ValueIndexConfiguration(["marked"]))
                let query = try engine.database.createQuery("SELECT COUNT(*) AS n FROM _default WHERE marked = true")
                let stream = query.changes()
                // Every save adds a marked document: every commit changes the results.
                let arrivals = relay(stream) { liveCount($0) > 0 }
                return try await timeSaves(count, into: engine, arrivals: arrivals) {
                    MutableDocument(id: "marked-\($0)").setBoolean(true, forKey: "marked")
                }
            }
        },
        Workload(
            name: "live-queries-8",
            summary: "8 live queries under N (at most 10,000) single-document saves from 8 tasks, until all are current",
            isCouchetteOnly: true
        ) { _, context in
            let count = min(context.size, 10_000)
            var samples: [Sample] = []
            var contents: [String: String]?
            for run in 0..<context.runs {
                let engine = try await CouchetteEngine(directory: try freshFolder(context, run), durable: false)
                let seconds = try await time { try await eightLiveQueries(engine, saves: count) }
                samples.append(Sample(seconds: seconds, ops: count))
                if context.captureContents && run == context.runs - 1 { contents = try await engine.contents() }
                try await engine.close()
            }
            return WorkloadResult(samples: samples, contents: contents)
        },
        Workload(
            name: "idle-cpu",
            summary:
                "CPU time per second that following one collection.changes() stream adds to an idle process (5 s idle with, minus 5 s without, the benchmark's memory sampler left out; 0.2 s below 1,000 documents)",
            isCouchetteOnly: true, runsOnce: true
        ) { _, context in
            let engine = try await CouchetteEngine(directory: try freshFolder(context, 0), durable: false)
            try await engine.insertAll(DocumentGenerator().documents(count: min(context.size, 1000)))
            let idle = context.size >= 1000 ? 5.0 : 0.2
            // An idle process uses some CPU too (timers, the runtime): measure it without a stream first.
            let withoutStream = try await cpuSeconds(idling: idle)
            let stream = engine.collection.changes()
            let consumer = Task { for await _ in stream {} }
            try await Task.sleep(for: .milliseconds(200))  // let the stream settle before measuring
            let withStream = try await cpuSeconds(idling: idle)
            consumer.cancel()
            let contents = context.captureContents ? try await engine.contents() : nil
            try await engine.close()
            return WorkloadResult(samples: [Sample(seconds: (withStream - withoutStream) / idle, ops: 1)], contents: contents)
        },
    ]

    /// The CPU time this process uses while the calling task sleeps `seconds`, less what the
    /// benchmark's memory sampler used meanwhile: 13 to 16 ms per second here, which drowned what
    /// an idle stream or replicator costs (tens of microseconds per second), so differences came
    /// out at random, negative ones included.
    static func cpuSeconds(idling seconds: Double) async throws -> Double {
        let before = processCPUSeconds()
        let samplingBefore = MemorySampler.samplingCPUNanoseconds.load(ordering: .relaxed)
        try await Task.sleep(for: .seconds(seconds))
        let sampling = MemorySampler.samplingCPUNanoseconds.load(ordering: .relaxed) &- samplingBefore
        return processCPUSeconds() - before - Double(sampling) / 1e9
    }

    /// User plus system CPU time this process has used so far, in seconds.
    static func processCPUSeconds() -> Double {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        func seconds(_ time: timeval) -> Double { Double(time.tv_sec) + Double(time.tv_usec) / 1e6 }
        return seconds(usage.ru_utime) + seconds(usage.ru_stime)
    }

    /// The `n` of a `SELECT COUNT(*) AS n` live query event; -1 for an error.
    private static func liveCount(_ change: QueryChange) -> Int {
        var rows = change.results?.makeIterator()
        return rows?.next()?.int(forKey: "n") ?? -1
    }

    /// Runs `measure` once per run in a fresh database; each returns the latencies of one run.
    private static func latencyRuns(
        _ context: WorkloadContext,
        _ measure: (CouchetteEngine) async throws -> [Double]
    ) async throws -> WorkloadResult {
        var samples: [Sample] = []
        var contents: [String: String]?
        for run in 0..<context.runs {
            let engine = try await CouchetteEngine(directory: try freshFolder(context, run), durable: false)
            let latencies = try await measure(engine).sorted()
            guard !latencies.isEmpty else { throw BenchmarkError.engine("no event arrived") }
            samples.append(
                Sample(
                    seconds: latencies[latencies.count / 2], ops: latencies.count,
                    p99: latencies[min(latencies.count - 1, latencies.count * 99 / 100)]))
            if context.captureContents && run == context.runs - 1 { contents = try await engine.contents() }
            try await engine.close()
        }
        return WorkloadResult(samples: samples, contents: contents)
    }

    /// Consumes `stream` in a `for await` loop of its own task and relays the arrival time of each
    /// event that `counts` to the measuring task.
    private static func relay<Element: Sendable>(
        _ stream: ChangeStream<Element>,
        counts: @escaping @Sendable (Element) -> Bool
    ) -> AsyncStream<ContinuousClock.Instant> {
        let (arrivals, continuation) = AsyncStream.makeStream(of: ContinuousClock.Instant.self)
        let consumer = Task {
            for await event in stream where counts(event) { continuation.yield(.now) }
            continuation.finish()
        }
        continuation.onTermination = { _ in consumer.cancel() }
        return arrivals
    }

    /// Saves `count` documents one at a time, each after the previous one's event arrived; returns
    /// the seconds from each `save()` call to its event.
    private static func timeSaves(
        _ count: Int, into engine: CouchetteEngine, arrivals: AsyncStream<ContinuousClock.Instant>,
        document: (Int) -> MutableDocument
    ) async throws -> [Double] {
        var iterator = arrivals.makeAsyncIterator()
        var latencies: [Double] = []
        latencies.reserveCapacity(count)
        for index in 0..<count {
            let next = document(index)
            let start = ContinuousClock.now
            try await engine.collection.save(document: next)
            guard let arrival = await iterator.next() else { throw BenchmarkError.engine("the change stream ended") }
            let elapsed = arrival - start
            latencies.append(elapsed.inSeconds)
        }
        return latencies
    }

    /// 8 live queries (one per bucket) follow `saves` single-document saves from 8 tasks; returns
    /// once every query has delivered its final count.
    private static func eightLiveQueries(_ engine: CouchetteEngine, saves: Int) async throws {
        let buckets = 8
        let streams = try (0..<buckets).map { bucket in
            try engine.database.createQuery("SELECT COUNT(*) AS n FROM _default WHERE bucket = \(bucket)").changes()
        }
        let collection = engine.collection
        try await withThrowingTaskGroup(of: Void.self) { group in
            for (bucket, stream) in streams.enumerated() {
                let expected = (0..<saves).filter { $0 % buckets == bucket }.count
                group.addTask {
                    for await change in stream where liveCount(change) == expected { return }
                    throw BenchmarkError.engine("live query \(bucket) ended before it was current")
                }
            }
            for writer in 0..<buckets {
                group.addTask {
                    for index in stride(from: writer, to: saves, by: buckets) {
                        try await collection.save(document: MutableDocument(id: "doc-\(index)").setInt(index % buckets, forKey: "bucket"))
                    }
                }
            }
            try await group.waitForAll()
        }
    }
}
