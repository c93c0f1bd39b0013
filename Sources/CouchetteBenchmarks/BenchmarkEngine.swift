import Foundation

/// One store measured by the benchmark: Couchette, or a baseline written against a C API.
///
/// Every engine receives the same generated JSON documents. Methods are the timed operations;
/// preparing inputs happens before they are called.
public protocol BenchmarkEngine: AnyObject {
    /// `couchette`, `sqlite` or `lmdb`, as in the `--json` output.
    static var name: String { get }

    /// Opens (creating if needed) the store in `directory`. `durable` asks for a sync of data and
    /// metadata at every commit; otherwise the engine's lighter default.
    init(directory: String, durable: Bool) async throws

    /// Stores every document in one transaction.
    func insertAll(_ documents: [DocumentGenerator.GeneratedDocument]) async throws
    /// Stores the batches `nextBatch` gives until it returns nil, each in one transaction, in
    /// order; when it returns, every batch is committed. An engine with a bulk-loading loop uses it
    /// (Couchette: ``Database/inBatches(_:)``, which commits a batch while the next is read);
    /// otherwise ``insertAll(_:)`` per batch.
    func insertBatches(_ nextBatch: () throws -> [DocumentGenerator.GeneratedDocument]?) async throws
    /// Stores each document in its own transaction, from `writers` concurrent writers where the
    /// engine supports it.
    func saveEach(_ documents: [DocumentGenerator.GeneratedDocument], writers: Int) async throws
    /// Reads each document and decodes it to a dictionary; returns the number of top-level keys
    /// seen (so the work cannot be optimized away).
    func readEach(_ ids: [String]) async throws -> Int
    /// Increments the `visits` field of each document, all in one transaction.
    func incrementVisits(_ ids: [String], updated: [String: String]) async throws
    /// Reads every document of the store, each decoded to a dictionary; returns how many.
    func iterateAll() async throws -> Int
    /// Stores the tasks, encoded from their model objects, in one transaction.
    func saveModels(_ tasks: [BenchTask]) async throws
    /// Stores the same tasks built as plain documents (no Codable), in one transaction.
    func saveTaskDocuments(_ tasks: [BenchTask]) async throws
    /// Reads each task back into a model object; returns the sum of their priorities.
    func readModels(_ ids: [String]) async throws -> Int
    /// Every stored document as JSON with sorted keys, for checking that engines agree.
    func contents() async throws -> [String: String]
    /// Bytes the store occupies on disk.
    func diskSize() throws -> UInt64
    func close() async throws
}

extension BenchmarkEngine {
    public func insertBatches(_ nextBatch: () throws -> [DocumentGenerator.GeneratedDocument]?) async throws {
        while let batch = try nextBatch() { try await insertAll(batch) }
    }
}

enum BenchmarkError: Error, CustomStringConvertible {
    case engine(String)
    case usage(String)

    var description: String {
        switch self {
        case .engine(let message): message
        case .usage(let message): message
        }
    }
}

/// JSON text with sorted keys: the common form engines are compared in.
func canonicalJSON(_ object: Any) -> String {
    let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])) ?? Data()
    return String(decoding: data, as: UTF8.self)
}

func canonicalJSON(text: String) -> String {
    guard let object = try? JSONSerialization.jsonObject(with: Data(text.utf8)) else { return text }
    return canonicalJSON(object)
}

/// Bytes of every regular file under `path`.
func directorySize(_ path: String) -> UInt64 {
    guard let enumerator = FileManager.default.enumerator(atPath: path) else { return 0 }
    var total: UInt64 = 0
    for case let file as String in enumerator {
        let attributes = try? FileManager.default.attributesOfItem(atPath: path + "/" + file)
        if attributes?[.type] as? FileAttributeType == .typeRegular {
            total += (attributes?[.size] as? NSNumber)?.uint64Value ?? 0
        }
    }
    return total
}
