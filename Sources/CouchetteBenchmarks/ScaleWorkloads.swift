import Foundation

/// Workloads over ten times N documents (1,000,000 at the default N of 100,000): how long a large
/// database takes to open, and how much memory importing one takes.
///
/// Documents are generated, written and stored 1,000 at a time and never all held at once, so the
/// child process's peak anonymous memory is the engine's own.
extension Workload {
    /// Documents per scale workload: `scaleFactor` × N.
    static let scaleFactor = 10
    /// Documents per transaction when building or importing a large store.
    static let scaleBatchSize = 1000

    static let scale: [Workload] = [
        Workload(name: "open", summary: "open a database of 10×N documents (1M at the default N) and read one") { engine, context in
            let count = context.size * scaleFactor
            let folder = try freshFolder(context, 0)
            let builder = try await engine.init(directory: folder, durable: false)
            try await insertGenerated(count, into: builder)
            try await builder.close()
            var samples: [Sample] = []
            var contents: [String: String]?
            for run in 0..<context.runs {
                var store: (any BenchmarkEngine)?
                let seconds = try await time {
                    store = try await engine.init(directory: folder, durable: false)
                    _ = try await store?.readEach([DocumentGenerator.id(count - 1)])
                }
                if context.captureContents && run == context.runs - 1 { contents = try await store?.contents() }
                try await store?.close()
                samples.append(Sample(seconds: seconds, ops: 1))
            }
            return WorkloadResult(samples: samples, contents: contents)
        },
        Workload(
            name: "import",
            summary: "import 10×N documents (1M at the default N) from a JSON-lines file, 1,000 per transaction: see peak anon memory",
            runsOnce: true
        ) { engine, context in
            let count = context.size * scaleFactor
            let file = try freshFolder(context, 0) + "/import.jsonl"
            try writeJSONLines(count, to: file)
            defer { try? FileManager.default.removeItem(atPath: file) }
            var once = context
            once.runs = 1
            return try await onFreshStores(engine, once, durable: false) { store in
                var imported = 0
                let seconds = try await time { imported = try await importJSONLines(file, into: store) }
                guard imported == count else { throw BenchmarkError.engine("\(engine.name) imported \(imported) of \(count)") }
                return Sample(seconds: seconds, ops: imported)
            }
        },
    ]

    /// Generates and stores `count` documents, `scaleBatchSize` per transaction.
    private static func insertGenerated(_ count: Int, into store: any BenchmarkEngine) async throws {
        var batch: [DocumentGenerator.GeneratedDocument] = []
        batch.reserveCapacity(scaleBatchSize)
        for document in DocumentGenerator().lazyDocuments(count: count) {
            batch.append(document)
            if batch.count == scaleBatchSize {
                try await store.insertAll(batch)
                batch.removeAll(keepingCapacity: true)
            }
        }
        if !batch.isEmpty { try await store.insertAll(batch) }
    }

    /// Writes `count` generated documents as lines of `id <tab> json`.
    private static func writeJSONLines(_ count: Int, to path: String) throws {
        guard FileManager.default.createFile(atPath: path, contents: nil),
            let handle = FileHandle(forWritingAtPath: path)
        else {
            throw BenchmarkError.engine("cannot create \(path)")
        }
        defer { try? handle.close() }
        var buffer: [UInt8] = []
        buffer.reserveCapacity(1 << 20)
        for document in DocumentGenerator().lazyDocuments(count: count) {
            buffer.append(contentsOf: document.id.utf8)
            buffer.append(0x09)
            buffer.append(contentsOf: document.json.utf8)
            buffer.append(0x0A)
            if buffer.count >= 1 << 20 {
                try handle.write(contentsOf: buffer)
                buffer.removeAll(keepingCapacity: true)
            }
        }
        try handle.write(contentsOf: buffer)
    }

    /// Reads the lines written by ``writeJSONLines(_:to:)`` one at a time and stores them,
    /// `scaleBatchSize` per transaction (through the engine's bulk-loading loop, see
    /// ``BenchmarkEngine/insertBatches(_:)``); returns how many were stored.
    private static func importJSONLines(_ path: String, into store: any BenchmarkEngine) async throws -> Int {
        guard let file = fopen(path, "r") else { throw BenchmarkError.engine("cannot open \(path)") }
        defer { fclose(file) }
        var line: UnsafeMutablePointer<CChar>?
        var capacity = 0
        defer { free(line) }
        var batch: [DocumentGenerator.GeneratedDocument] = []
        batch.reserveCapacity(scaleBatchSize)
        var imported = 0
        var ended = false
        try await store.insertBatches {
            batch.removeAll(keepingCapacity: true)
            while !ended && batch.count < scaleBatchSize {
                let length = getline(&line, &capacity, file)
                guard length > 0, let line else {
                    ended = true
                    break
                }
                let bytes = UnsafeRawBufferPointer(start: line, count: length - 1)  // without the newline
                guard let tab = bytes.firstIndex(of: 0x09) else { throw BenchmarkError.engine("malformed line in \(path)") }
                batch.append(
                    DocumentGenerator.GeneratedDocument(
                        id: String(decoding: bytes[..<tab], as: UTF8.self),
                        json: String(decoding: bytes[(tab + 1)...], as: UTF8.self)))
            }
            imported += batch.count
            return batch.isEmpty ? nil : batch
        }
        return imported
    }
}
