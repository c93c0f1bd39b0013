import Couchette
import Foundation

/// `couchette get DB ID [--collection C]`
enum GetCommand {
    static let command = Command(
        name: "get", arguments: [.database, .init("ID", "the document's id")],
        summary: "Print a document as JSON, with its _id and _rev",
        discussion: "Output: one line, {\"_id\":…,\"_rev\":…, then the properties}. A missing or deleted document is an error.",
        options: [.collection]
    ) { arguments in
        try await withOpenDatabase(arguments.positional[0]) { database in
            let collection = try arguments.collectionName.existing(in: database)
            print(try await documentJSON(id: arguments.positional[1], in: collection))
        }
    }

    /// The document's JSON with `_id` and `_rev`, or an error naming the missing document.
    static func documentJSON(id: String, in collection: Collection) async throws -> String {
        guard let document = try await collection.document(id: id) else {
            throw ToolError("no document '\(id)' in \(collection.fullName)")
        }
        return JSONText.document(id: document.id, revisionID: document.revisionID, body: document.toJSON())
    }
}
