import Couchette
import Foundation

/// `couchette put DB ID JSON [--collection C]`
enum PutCommand {
    static let command = Command(
        name: "put",
        arguments: [
            .database, .init("ID", "the document's id"),
            .init("JSON", "the new body, a JSON object ('-' reads it from standard input)"),
        ],
        summary: "Create or replace a document; prints its new revision",
        discussion: """
            The body replaces the whole document. An '_id' in the body is ignored; a '_rev' makes the
            write conditional: it fails (exit 1) unless the document is at that revision, so
            'get', edit, 'put' never overwrites someone else's change.
            """,
        options: [.collection]
    ) { arguments in
        let id = arguments.positional[1]
        var json = arguments.positional[2]
        if json == "-" {
            json = String(decoding: FileHandle.standardInput.readDataToEndOfFile(), as: UTF8.self)
        }
        let body: MutableDocument
        do {
            body = try MutableDocument(id: id, json: json)
        } catch let error as CouchetteError {
            throw ToolError("JSON for document '\(id)': \(error.message)")
        }
        try await withOpenDatabase(arguments.positional[0], create: true) { database in
            let collection = try await arguments.collectionName.created(in: database)
            let expected = body.value(forKey: "_rev")
            let current = try await collection.document(id: id)
            let document = current?.toMutable() ?? MutableDocument(id: id)
            try document.setJSON(json)
            document.removeValue(forKey: "_id").removeValue(forKey: "_rev")
            if let expected {
                guard let expected = expected as? String else { throw ToolError("_rev must be a string") }
                guard current?.revisionID == expected else {
                    throw ToolError("conflict: document '\(id)' is at revision \(current?.revisionID ?? "(none)"), not \(expected)")
                }
                guard try await collection.save(document: document, concurrencyControl: .failOnConflict) else {
                    throw ToolError("conflict: document '\(id)' changed while it was being saved")
                }
            } else {
                try await collection.save(document: document)
            }
            print(document.revisionID ?? "")
        }
    }
}
