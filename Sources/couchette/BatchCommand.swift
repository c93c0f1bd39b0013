import Couchette
import Foundation

/// `couchette batch DB [--put ID=JSON ...] [--purge ID ...]`: saves and purges documents in one
/// batch, hence one commit. The cross-process tests use it to make another process commit a save
/// and a purge together.
enum BatchCommand {
    static let command = Command(
        name: "batch", arguments: [.database],
        summary: "Save and purge documents in one commit (used by the cross-process tests)",
        options: [
            .init(name: "put", valueName: "ID=JSON", help: "create or replace document ID with the JSON object", isRepeatable: true),
            .init(name: "purge", valueName: "ID", help: "purge document ID", isRepeatable: true),
            .collection,
        ],
        isHidden: true
    ) { arguments in
        let puts = try (arguments.repeated["put"] ?? []).map { argument -> MutableDocument in
            guard let equals = argument.firstIndex(of: "=") else { throw UsageError("--put needs ID=JSON, not '\(argument)'") }
            let id = String(argument[..<equals])
            do {
                return try MutableDocument(id: id, json: String(argument[argument.index(after: equals)...]))
            } catch let error as CouchetteError {
                throw ToolError("JSON for document '\(id)': \(error.message)")
            }
        }
        let purges = arguments.repeated["purge"] ?? []
        try await withOpenDatabase(arguments.positional[0]) { database in
            let collection = try arguments.collectionName.existing(in: database)
            try await database.inBatch { batch in
                for document in puts { try batch.save(document: document, in: collection) }
                for id in purges { try batch.purge(id: id, in: collection) }
            }
        }
    }
}
