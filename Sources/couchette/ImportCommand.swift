@_spi(Tools) import Couchette
import Foundation

/// `couchette import DB FILE [--collection SCOPE.NAME] [--id-key KEY]`
enum ImportCommand {
    static let command = Command(
        name: "import", arguments: [.database, .init("FILE", "JSON lines, or one JSON array of objects ('-' reads standard input)")],
        summary: "Import JSON documents into a collection, committing in batches",
        discussion: """
            Each document's id is its '_id' field when present (its '_rev' is dropped), else the
            --id-key field (removed from the body), else a generated one. Existing documents with
            the same id are replaced. Creates the database and the collection when missing.
            Blob dictionaries with their content inlined in a base64 'data' field (what
            'export --with-blobs' writes) become blobs again.
            A malformed record stops the import with its line number; the batch it belongs to is not
            written at all, earlier batches stay. Progress goes to standard error: a bar with the
            rate and the time left on a terminal, plain lines otherwise.
            """,
        options: [
            .collection,
            .init(name: "id-key", valueName: "KEY", help: "take ids from this field when there is no _id"),
            .init(name: "batch-size", valueName: "N", help: "documents per transaction (default: 1000)"),
        ]
    ) { arguments in
        let batchSize =
            try arguments.options["batch-size"].map { text in
                guard let size = Int(text), size > 0 else { throw UsageError("--batch-size needs a positive number, not '\(text)'") }
                return size
            } ?? 1000
        let file = arguments.positional[1]
        let reader = try JSONRecordReader(path: file)
        let collectionName = try arguments.collectionName
        try await withOpenDatabase(arguments.positional[0], create: true) { database in
            let collection = try await collectionName.created(in: database)
            let importer = Importer(collection: collection, idKey: arguments.options["id-key"], batchSize: batchSize)
            try await importer.run(reader, file: file == "-" ? "standard input" : file)
        }
    }
}

/// Reads records, turns them into documents, and commits them a batch at a time.
struct Importer {
    let collection: Collection
    let idKey: String?
    let batchSize: Int

    func run(_ reader: JSONRecordReader, file: String) async throws {
        let progress = ProgressReporter(unit: "docs")
        var imported = 0
        // Batches filled but not known to be committed, oldest first: `inBatches` commits one while
        // the next is filled, and a body starts only once the batch before the last has committed.
        var unconfirmed: [(line: Int, count: Int)] = []
        var batchLine = 1
        func failure(_ problem: String) -> ToolError {
            progress.finish()
            return ToolError("\(problem) (\(imported) document\(imported == 1 ? "" : "s") imported before it)")
        }
        do {
            // Records are read and transcoded inside the batch body, straight into the batch.
            try await collection.database.inBatches { batch in
                while unconfirmed.count > 1 { imported += unconfirmed.removeFirst().count }
                var count = 0
                do {
                    while count < batchSize, let record = try reader.next() {
                        if count == 0 { batchLine = record.line }
                        do {
                            try add(record.text, to: batch)
                        } catch {
                            throw BadRecord(
                                message: "\(file), line \(record.line): \(CouchetteTool.describe(error)); "
                                    + "nothing from line \(batchLine) on was written")
                        }
                        count += 1
                    }
                } catch let error as BadRecord {
                    throw error
                } catch let error as ToolError {
                    throw error
                } catch {
                    throw BadRecord(message: "\(CouchetteTool.describe(error)); nothing from line \(batchLine) on was written")
                }
                guard count > 0 else { return false }
                unconfirmed.append((batchLine, count))
                let (done, total) = reader.progress
                progress.update(
                    count: imported + unconfirmed.reduce(0) { $0 + $1.count }, fraction: total > 0 ? Double(done) / Double(total) : 1)
                return true
            }
            imported += unconfirmed.reduce(0) { $0 + $1.count }
        } catch let error as BadRecord {
            // A body failed: the batches before its own were committed first.
            imported += unconfirmed.reduce(0) { $0 + $1.count }
            throw failure(error.message)
        } catch let error as ToolError {
            imported += unconfirmed.reduce(0) { $0 + $1.count }
            throw failure("\(file), \(error)")
        } catch {
            // A commit failed: the oldest batch not known to be committed, and nothing after it.
            throw failure("\(CouchetteTool.describe(error)); nothing from line \(unconfirmed.first?.line ?? batchLine) on was written")
        }
        progress.finish()
        print(
            "Imported \(imported) document\(imported == 1 ? "" : "s") into \(collection.fullName) "
                + "in \(ResultPrinter.seconds(progress.elapsed))")
    }

    /// Adds the document a record describes to `batch`. JSON goes straight into the batch's
    /// binary buffer (the library's bulk path, which takes the id from `_id` or the id key and
    /// leaves `_id`, `_rev` and the id key out); only a record that may hold inlined blobs is
    /// built as a `MutableDocument`, whose blobs are restored before it is saved.
    func add(_ text: String, to batch: Batch) throws {
        guard text.hasPrefix("{") else {
            throw ToolError("expected a JSON object, found \(text.prefix(20))\(text.count > 20 ? "…" : "")")
        }
        if Self.mayHoldInlineBlobs(text) {
            try batch.save(document: try document(from: text), in: collection)
        } else {
            try batch.save(json: text, idKeys: ["_id"] + (idKey.map { [$0] } ?? []), removing: ["_id", "_rev"], in: collection)
        }
    }

    private struct BadRecord: Error {
        let message: String
    }

    /// The document a record describes: its id from `_id`, else `idKey`, else generated.
    func document(from text: String) throws -> MutableDocument {
        guard text.hasPrefix("{") else {
            throw ToolError("expected a JSON object, found \(text.prefix(20))\(text.count > 20 ? "…" : "")")
        }
        let parsed = try MutableDocument(id: nil, json: text)
        var id: String?
        var dropped: Set<String> = ["_id", "_rev"]
        if let value = parsed.value(forKey: "_id") {
            id = try Self.idText(value, field: "_id")
        } else if let idKey, let value = parsed.value(forKey: idKey) {
            id = try Self.idText(value, field: idKey)
            dropped.insert(idKey)
        }
        // The body is read again under its id rather than copied value by value: transcoding is
        // cheaper than converting every value, and untouched parts stay in their stored form.
        let document = id.map { MutableDocument(id: $0) } ?? parsed
        if document !== parsed { try document.setJSON(text) }
        for key in dropped where document.contains(key: key) { document.removeValue(forKey: key) }
        if Self.mayHoldInlineBlobs(text) { try InlineBlobs.restore(in: document) }
        return document
    }

    /// Whether `text` can hold a blob dictionary (`"@type": "blob"`), which restoring inline
    /// blobs would have to find by reading every value: not without `@type`, or an escape that
    /// could spell it.
    static func mayHoldInlineBlobs(_ text: String) -> Bool {
        text.utf8.contains(UInt8(ascii: "@")) || text.utf8.contains(UInt8(ascii: "\\"))
    }

    /// A string id, or an integer written in decimal.
    static func idText(_ value: Any, field: String) throws -> String {
        switch value {
        case let text as String where !text.isEmpty: return text
        case let number as Int: return String(number)
        default: throw ToolError("'\(field)' must be a non-empty string or an integer, not \(JSONText.encode(value))")
        }
    }
}
