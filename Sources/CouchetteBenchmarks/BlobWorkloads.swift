import Couchette
import Foundation

/// Couchette-only workloads: blob throughput (against the same bytes written to and read from
/// plain files), attachment replication, and the memory a 500 MB blob costs.
extension Workload {
    /// Bytes per blob of the throughput rows.
    static let blobSize = 1 << 20

    static let blobs: [Workload] = [
        Workload(
            name: "blob-write",
            summary: "save N (at most 64) documents with a distinct 1 MB blob each (ops = MB; compare blob-write-file)",
            isCouchetteOnly: true
        ) { _, context in
            try await blobThroughput(context, reading: false)
        },
        Workload(
            name: "blob-write-file",
            summary: "baseline of blob-write: the same bytes written to N new files, each fsynced and renamed into place",
            isCouchetteOnly: true
        ) { _, context in
            try await fileThroughput(context, reading: false)
        },
        Workload(
            name: "blob-read",
            summary: "read N (at most 64) 1 MB blobs back through contentStream() (ops = MB; compare blob-read-file)",
            isCouchetteOnly: true
        ) { _, context in
            try await blobThroughput(context, reading: true)
        },
        Workload(
            name: "blob-read-file",
            summary: "baseline of blob-read: the same files read back in 256 KiB chunks",
            isCouchetteOnly: true
        ) { _, context in
            try await fileThroughput(context, reading: true)
        },
        Workload(
            name: "replicate-attachments",
            summary: "push N (at most 32) documents with a 1 MB blob each to a URLEndpointListener on loopback, one-shot (ops = MB)",
            isCouchetteOnly: true
        ) { _, context in
            try await replicateAttachments(context)
        },
        Workload(
            name: "blob-500mb-memory",
            summary:
                "anonymous memory (RssAnon, sampled) a 500 MB blob adds while it is saved from a file, read back by stream and replicated in process (4 MB below N = 1,000)",
            isCouchetteOnly: true, runsOnce: true
        ) { _, context in
            try await largeBlobMemory(context, megabytes: context.size >= 1000 ? 500 : 4)
        },
        Workload(
            name: "blob-500mb-http-memory",
            summary:
                "anonymous memory (RssAnon, sampled) a 500 MB blob adds while it is pushed to a URLEndpointListener on loopback and pulled back into a third database, both as multipart (4 MB below N = 1,000)",
            isCouchetteOnly: true, runsOnce: true
        ) { _, context in
            try await largeBlobHTTPMemory(context, megabytes: context.size >= 1000 ? 500 : 4)
        },
    ]

    /// `count` distinct MB-sized contents (each starts with its number).
    static func blobContents(_ count: Int) -> [Data] {
        let base = Data((0..<blobSize).map { UInt8(truncatingIfNeeded: $0 &* 2_654_435_761 >> 13) })
        return (0..<count).map { index in
            var content = base
            withUnsafeBytes(of: UInt64(index)) { content.replaceSubrange(0..<8, with: $0) }
            return content
        }
    }

    private static func blobThroughput(_ context: WorkloadContext, reading: Bool) async throws -> WorkloadResult {
        let contents = blobContents(min(context.size, 64))
        var samples: [Sample] = []
        var captured: [String: String]?
        for run in 0..<context.runs {
            let engine = try await CouchetteEngine(directory: try freshFolder(context, run), durable: false)
            let write = {
                for (index, content) in contents.enumerated() {
                    let document = MutableDocument(id: "blob-\(index)").setBlob(
                        Blob(contentType: "application/octet-stream", data: content), forKey: "content")
                    try await engine.collection.save(document: document)
                }
            }
            if reading {
                try await write()
                let seconds = try await time {
                    for index in contents.indices {
                        guard let blob = try await engine.collection.document(id: "blob-\(index)")?.blob(forKey: "content") else {
                            throw BenchmarkError.engine("blob-\(index) has no blob")
                        }
                        var bytes = 0
                        for try await chunk in blob.contentStream() { bytes += chunk.count }
                        guard bytes == blobSize else { throw BenchmarkError.engine("blob-\(index) read \(bytes) bytes") }
                    }
                }
                samples.append(Sample(seconds: seconds, ops: contents.count))
            } else {
                samples.append(Sample(seconds: try await time(write), ops: contents.count))
            }
            if context.captureContents { captured = try await engine.contents() }
            try await engine.close()
        }
        return WorkloadResult(samples: samples, contents: captured)
    }

    /// The files baseline: what writing (temporary file, fsync, rename) and reading the same
    /// bytes costs without a database.
    private static func fileThroughput(_ context: WorkloadContext, reading: Bool) async throws -> WorkloadResult {
        let contents = blobContents(min(context.size, 64))
        var samples: [Sample] = []
        for run in 0..<context.runs {
            let folder = try freshFolder(context, run)
            let write = {
                for (index, content) in contents.enumerated() {
                    let temporary = folder + "/.tmp-\(index)"
                    guard FileManager.default.createFile(atPath: temporary, contents: nil),
                        let handle = FileHandle(forWritingAtPath: temporary)
                    else { throw BenchmarkError.engine("cannot create \(temporary)") }
                    try handle.write(contentsOf: content)
                    try handle.synchronize()
                    try handle.close()
                    guard rename(temporary, folder + "/blob-\(index)") == 0 else {
                        throw BenchmarkError.engine("cannot rename \(temporary)")
                    }
                }
            }
            if reading {
                try write()
                let seconds = try await time {
                    for index in contents.indices {
                        guard let handle = FileHandle(forReadingAtPath: folder + "/blob-\(index)") else {
                            throw BenchmarkError.engine("cannot open blob-\(index)")
                        }
                        var bytes = 0
                        while let chunk = try handle.read(upToCount: 256 * 1024), !chunk.isEmpty { bytes += chunk.count }
                        try handle.close()
                        guard bytes == blobSize else { throw BenchmarkError.engine("blob-\(index) read \(bytes) bytes") }
                    }
                }
                samples.append(Sample(seconds: seconds, ops: contents.count))
            } else {
                samples.append(Sample(seconds: try await time { try write() }, ops: contents.count))
            }
        }
        let written =
            context.captureContents ? Dictionary(uniqueKeysWithValues: contents.indices.map { ("blob-\($0)", "\(blobSize) bytes") }) : nil
        return WorkloadResult(samples: samples, contents: written)
    }

    private static func replicateAttachments(_ context: WorkloadContext) async throws -> WorkloadResult {
        let contents = blobContents(min(context.size, 32))
        var samples: [Sample] = []
        var captured: [String: String]?
        for run in 0..<context.runs {
            let folder = try freshFolder(context, run)
            let source = try await CouchetteEngine(directory: folder + "/source", durable: false)
            let target = try await CouchetteEngine(directory: folder + "/target", durable: false)
            for (index, content) in contents.enumerated() {
                try await source.collection.save(
                    document: MutableDocument(id: "att-\(index)")
                        .setBlob(Blob(contentType: "application/octet-stream", data: content), forKey: "content"))
            }
            var listenerConfig = URLEndpointListenerConfiguration(collections: [target.collection])
            listenerConfig.disableTLS = true
            let listener = URLEndpointListener(config: listenerConfig)
            try await listener.start()
            guard let url = listener.urls.first else { throw BenchmarkError.engine("the listener reports no URL") }
            var config = ReplicatorConfiguration(target: URLEndpoint(url: url))
            config.addCollection(source.collection)
            config.replicatorType = .push
            let replicator = try Replicator(config: config)
            let seconds = try await time { try await runOnce(replicator) }
            await listener.stop()
            guard try await target.collection.document(id: "att-\(contents.count - 1)")?.blob(forKey: "content")?.content() == contents.last
            else {
                throw BenchmarkError.engine("the last attachment did not arrive intact")
            }
            samples.append(Sample(seconds: seconds, ops: contents.count))
            if context.captureContents && run == context.runs - 1 { captured = try await target.contents() }
            try await source.close()
            try await target.close()
        }
        return WorkloadResult(samples: samples, contents: captured)
    }

    /// A fresh folder holding `large.bin`, `megabytes` MB written a megabyte at a time.
    static func largeFile(_ context: WorkloadContext, megabytes: Int) throws -> (folder: String, file: String) {
        let folder = try freshFolder(context, 0)
        let file = folder + "/large.bin"
        guard FileManager.default.createFile(atPath: file, contents: nil), let handle = FileHandle(forWritingAtPath: file) else {
            throw BenchmarkError.engine("cannot create \(file)")
        }
        let chunk = blobContents(1)[0]
        for _ in 0..<megabytes { try handle.write(contentsOf: chunk) }
        try handle.close()
        return (folder, file)
    }

    /// Saves a `megabytes` MB blob from a file, streams it back and replicates it to another
    /// database in process; the sample's bytes are the peak growth of RssAnon over the start.
    static func largeBlobMemory(_ context: WorkloadContext, megabytes: Int) async throws -> WorkloadResult {
        let (folder, file) = try largeFile(context, megabytes: megabytes)
        let source = try await CouchetteEngine(directory: folder + "/source", durable: false)
        let target = try await CouchetteEngine(directory: folder + "/target", durable: false)
        let start = MemorySampler.anonymousResidentBytes()
        let sampler = MemorySampler()
        let seconds = try await time {
            let blob = try Blob(contentType: "application/octet-stream", fileURL: URL(fileURLWithPath: file))
            try await source.collection.save(document: MutableDocument(id: "large").setBlob(blob, forKey: "content"))
            var read = 0
            for try await part in blob.contentStream() { read += part.count }
            guard read == megabytes << 20 else { throw BenchmarkError.engine("read back \(read) bytes") }
            var config = ReplicatorConfiguration(target: DatabaseEndpoint(database: target.database))
            config.addCollection(source.collection)
            config.replicatorType = .push
            try await runOnce(try Replicator(config: config))
            guard let copy = try await target.collection.document(id: "large")?.blob(forKey: "content"),
                copy.length == UInt64(megabytes << 20), copy.digest == blob.digest
            else {
                throw BenchmarkError.engine("the replicated blob is missing or different")
            }
        }
        let peak = sampler.stop()
        let captured = context.captureContents ? try await target.contents() : nil
        try await source.close()
        try await target.close()
        return WorkloadResult(samples: [Sample(seconds: seconds, ops: 1, bytes: UInt64(max(0, peak - start)))], contents: captured)
    }
}
