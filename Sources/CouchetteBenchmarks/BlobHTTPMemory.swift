import Couchette
import Foundation

/// `blob-500mb-http-memory`: what replicating one large blob over loopback HTTP costs in
/// anonymous memory, both ways: pushed from a database to a listener (a `multipart/related` PUT
/// streamed from the blob file, read by the listener into its blob store as it arrives), then
/// pulled from that listener into a third database (`open_revs` as multipart, staged to a
/// temporary file). The sample's bytes are the peak growth of RssAnon over the start.
extension Workload {
    static func largeBlobHTTPMemory(_ context: WorkloadContext, megabytes: Int) async throws -> WorkloadResult {
        let (folder, file) = try largeFile(context, megabytes: megabytes)
        let source = try await CouchetteEngine(directory: folder + "/source", durable: false)
        let served = try await CouchetteEngine(directory: folder + "/served", durable: false)
        let puller = try await CouchetteEngine(directory: folder + "/puller", durable: false)
        let blob = try Blob(contentType: "application/octet-stream", fileURL: URL(fileURLWithPath: file))
        try await source.collection.save(document: MutableDocument(id: "large").setBlob(blob, forKey: "content"))
        var listenerConfig = URLEndpointListenerConfiguration(collections: [served.collection])
        listenerConfig.disableTLS = true
        let listener = URLEndpointListener(config: listenerConfig)
        try await listener.start()
        guard let url = listener.urls.first else { throw BenchmarkError.engine("the listener reports no URL") }
        let start = MemorySampler.anonymousResidentBytes()
        let sampler = MemorySampler()
        let seconds = try await time {
            for (engine, type) in [(source, ReplicatorType.push), (puller, .pull)] {
                var config = ReplicatorConfiguration(target: URLEndpoint(url: url))
                config.addCollection(engine.collection)
                config.replicatorType = type
                try await runOnce(try Replicator(config: config))
                guard let copy = try await engine.collection.document(id: "large")?.blob(forKey: "content"),
                    copy.length == UInt64(megabytes << 20), copy.digest == blob.digest
                else {
                    throw BenchmarkError.engine("the blob did not arrive intact by \(type)")
                }
            }
        }
        let peak = sampler.stop()
        await listener.stop()
        let captured = context.captureContents ? try await puller.contents() : nil
        for engine in [source, served, puller] { try await engine.close() }
        return WorkloadResult(samples: [Sample(seconds: seconds, ops: 2, bytes: UInt64(max(0, peak - start)))], contents: captured)
    }
}
