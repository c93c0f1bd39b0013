@_spi(Benchmarks) import Couchette
import Foundation

/// Couchette-only workloads: replication throughput. The baselines have no replicator.
extension Workload {
    static let replication: [Workload] = [
        Workload(
            name: "replicate-in-process",
            summary: "push N (at most 10,000) ~1 KB documents to another database through DatabaseEndpoint, one-shot",
            isCouchetteOnly: true
        ) { _, context in
            try await replicateInProcess(context, .push)
        },
        Workload(
            name: "replicate-in-process-pull",
            summary: "pull N (at most 10,000) ~1 KB documents from another database through DatabaseEndpoint, one-shot",
            isCouchetteOnly: true
        ) { _, context in
            try await replicateInProcess(context, .pull)
        },
        Workload(
            name: "replicate-http",
            summary: "push N (at most 10,000) ~1 KB documents to another database served by a URLEndpointListener on loopback, one-shot",
            isCouchetteOnly: true
        ) { _, context in
            try await replicateInProcess(context, .push, overHTTP: true)
        },
        Workload(
            name: "replicate-http-pull",
            summary: "pull N (at most 10,000) ~1 KB documents from another database served by a URLEndpointListener on loopback, one-shot",
            isCouchetteOnly: true
        ) { _, context in
            try await replicateInProcess(context, .pull, overHTTP: true)
        },
        Workload(
            name: "replicate-https",
            summary: "replicate-http over TLS: the listener serves its anonymous self-signed identity, which the replicator pins",
            isCouchetteOnly: true
        ) { _, context in
            try await replicateInProcess(context, .push, overHTTP: true, tls: true)
        },
        Workload(
            name: "revision-history-1000",
            summary:
                "storage of one ~1 KB document edited 1,000 times (1,001 revisions, all ids kept: CouchDB's revs_limit): bytes of its record and revision tree; ops = revisions",
            isCouchetteOnly: true, runsOnce: true
        ) { _, context in
            try await revisionHistoryStorage(context)
        },
        Workload(
            name: "idle-replicator-cpu",
            summary:
                "CPU time per second that an idle continuous push-and-pull replicator over loopback HTTP adds to the process (both its ends: the replicator and the listener; one continuous _changes stream; 5 s idle with, minus the lower of 5 s without before it starts and after it stops, the benchmark's memory sampler left out; 0.2 s below 1,000 documents)",
            isCouchetteOnly: true, runsOnce: true
        ) { _, context in
            try await idleReplicatorCPU(context)
        },
        Workload(
            name: "idle-replicator-cpu-longpoll",
            summary:
                "idle-replicator-cpu through a CouchDBStyleProxy: long polls whose head and first bytes arrive at once and the rest when the wait ends, as CouchDB answers them",
            isCouchetteOnly: true, runsOnce: true
        ) { _, context in
            try await idleReplicatorCPU(context, throughCouchDBStyleProxy: true)
        },
    ]

    /// One document saved and then edited 1,000 times: what its history costs on disk (the
    /// record plus the revision tree that keeps 1,000 ancestor ids), independent of N.
    private static func revisionHistoryStorage(_ context: WorkloadContext) async throws -> WorkloadResult {
        let engine = try await CouchetteEngine(directory: try freshFolder(context, 0), durable: false)
        guard let original = DocumentGenerator().documents(count: 1).first else { throw BenchmarkError.engine("no document generated") }
        let document = try MutableDocument(id: original.id, json: original.json)
        for edit in 0...1000 {
            document.setInt(edit, forKey: "edit")
            try await engine.collection.save(document: document)
        }
        let (record, tree) = try engine.collection.storedBytes(id: original.id)
        guard tree > 0 else { throw BenchmarkError.engine("the edited document has no stored revision tree") }
        let contents = context.captureContents ? try await engine.contents() : nil
        try await engine.close()
        return WorkloadResult(samples: [Sample(seconds: 0, ops: 1001, bytes: UInt64(record + tree))], contents: contents)
    }

    /// Two databases, N (at most 1,000) documents replicated once, then a continuous replicator
    /// that has caught up: the CPU it uses while nothing changes (its `_changes` stream, or its
    /// long polls through the proxy, and the listener answering them), per second of idling.
    private static func idleReplicatorCPU(_ context: WorkloadContext, throughCouchDBStyleProxy: Bool = false) async throws -> WorkloadResult
    {
        let folder = try freshFolder(context, 0)
        let local = try await CouchetteEngine(directory: folder + "/local", durable: false)
        let remote = try await CouchetteEngine(directory: folder + "/remote", durable: false)
        try await local.insertAll(DocumentGenerator().documents(count: min(context.size, 1000)))
        var listenerConfig = URLEndpointListenerConfiguration(collections: [remote.collection])
        listenerConfig.disableTLS = true  // the CouchDB-style proxy speaks plain HTTP
        let listener = URLEndpointListener(config: listenerConfig)
        try await listener.start()
        guard var url = listener.urls.first, let port = listener.port else { throw BenchmarkError.engine("the listener reports no URL") }
        let proxy = throughCouchDBStyleProxy ? try CouchDBStyleProxy(upstreamPort: port) : nil
        if let proxy { url = URL(string: "http://127.0.0.1:\(proxy.port)\(url.path)")! }
        defer { proxy?.stop() }
        let idle = context.size >= 1000 ? 5.0 : 0.2
        // The baseline is idled twice, before the replicator starts and after it stops (the
        // listener up both times), and the lower taken: one baseline alone took a stray 8 ms in
        // some runs, more than the replicator's whole cost (which is within ±50 µs per second).
        let beforeReplicator = try await cpuSeconds(idling: idle)

        var config = ReplicatorConfiguration(target: URLEndpoint(url: url))
        config.addCollection(local.collection)
        config.replicatorType = .pushAndPull
        config.continuous = true
        let replicator = try Replicator(config: config)
        let changes = replicator.changes()
        await replicator.start()
        var started = false
        for await change in changes {
            if change.status.activity == .busy || change.status.activity == .connecting { started = true }
            if let error = change.status.error { throw error }
            if started && change.status.activity == .idle { break }
        }
        guard try await remote.collection.count == local.collection.count else {
            throw BenchmarkError.engine("the continuous replicator went idle before copying every document")
        }
        try await Task.sleep(for: .milliseconds(200))  // let the last checkpoint and longpolls settle
        let withReplicator = try await cpuSeconds(idling: idle)
        if let proxy, proxy.longPolls == 0 || proxy.refusedStreams == 0 {
            throw BenchmarkError.engine("the replicator did not fall back to long polls through the proxy")
        }
        await replicator.stop()
        try await Task.sleep(for: .milliseconds(200))  // let its connections close
        let afterReplicator = try await cpuSeconds(idling: idle)
        await listener.stop()
        let contents = context.captureContents ? try await remote.contents() : nil
        try await local.close()
        try await remote.close()
        let withoutReplicator = min(beforeReplicator, afterReplicator)
        return WorkloadResult(samples: [Sample(seconds: (withReplicator - withoutReplicator) / idle, ops: 1)], contents: contents)
    }

    /// Per run: N documents in one fresh database, replicated once into another fresh one
    /// (pushed from the first or pulled into the second); times the replication alone. With
    /// `overHTTP` the other database is served by a listener on loopback and reached through
    /// ``URLEndpoint`` (started before the clock runs); with `tls` too, over HTTPS with the
    /// listener's certificate pinned.
    private static func replicateInProcess(
        _ context: WorkloadContext, _ direction: ReplicatorType,
        overHTTP: Bool = false, tls: Bool = false
    ) async throws -> WorkloadResult {
        let documents = DocumentGenerator().documents(count: min(context.size, 10_000))
        var samples: [Sample] = []
        var contents: [String: String]?
        for run in 0..<context.runs {
            let folder = try freshFolder(context, run)
            let source = try await CouchetteEngine(directory: folder + "/source", durable: false)
            let target = try await CouchetteEngine(directory: folder + "/target", durable: false)
            try await source.insertAll(documents)
            // The replicator runs on the side that starts it: the source pushes, the target pulls.
            let (local, remote) = direction == .push ? (source, target) : (target, source)
            var listener: URLEndpointListener?
            var endpoint: any Endpoint = DatabaseEndpoint(database: remote.database)
            var pin: Data?
            if overHTTP {
                var listenerConfig = URLEndpointListenerConfiguration(collections: [remote.collection])
                listenerConfig.disableTLS = !tls  // replicate-http measures plain HTTP
                let server = URLEndpointListener(config: listenerConfig)
                try await server.start()
                guard let url = server.urls.first else { throw BenchmarkError.engine("the listener reports no URL") }
                if tls {
                    guard url.scheme == "https", let certificate = server.tlsIdentity?.certificates.first else {
                        throw BenchmarkError.engine("the listener does not serve HTTPS")
                    }
                    pin = certificate
                }
                endpoint = URLEndpoint(url: url)
                listener = server
            }
            var config = ReplicatorConfiguration(target: endpoint)
            config.pinnedServerCertificate = pin
            config.addCollection(local.collection)
            config.replicatorType = direction
            let replicator = try Replicator(config: config)
            let seconds = try await time { try await runOnce(replicator) }
            await listener?.stop()
            guard try await target.collection.count == UInt64(documents.count) else {
                throw BenchmarkError.engine("replication delivered \(try await target.collection.count) of \(documents.count) documents")
            }
            samples.append(Sample(seconds: seconds, ops: documents.count))
            if context.captureContents && run == context.runs - 1 { contents = try await target.contents() }
            try await source.close()
            try await target.close()
        }
        return WorkloadResult(samples: samples, contents: contents)
    }

    /// Starts a one-shot replicator and returns when it stopped; throws the error it stopped with.
    static func runOnce(_ replicator: Replicator) async throws {
        let changes = replicator.changes()
        await replicator.start()
        var started = false
        for await change in changes {
            if change.status.activity != .stopped { started = true; continue }
            guard started else { continue }
            if let error = change.status.error { throw error }
            return
        }
        throw BenchmarkError.engine("the replicator's status stream ended")
    }
}
