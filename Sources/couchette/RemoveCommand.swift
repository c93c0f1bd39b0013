import Couchette
import Foundation

/// `couchette rm DB ID [--collection C]`
enum RemoveCommand {
    static let command = Command(
        name: "rm", arguments: [.database, .init("ID", "the document's id")],
        summary: "Delete a document (it leaves a tombstone revision, which replicates)",
        options: [.collection]
    ) { arguments in
        let id = arguments.positional[1]
        try await withOpenDatabase(arguments.positional[0]) { database in
            let collection = try arguments.collectionName.existing(in: database)
            guard let document = try await collection.document(id: id) else {
                throw ToolError("no document '\(id)' in \(collection.fullName)")
            }
            try await collection.delete(document: document)
        }
    }
}
