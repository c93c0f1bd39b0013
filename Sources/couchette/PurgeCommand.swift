import Couchette
import Foundation

/// `couchette purge DB ID [--collection C]`
enum PurgeCommand {
    static let command = Command(
        name: "purge", arguments: [.database, .init("ID", "the document's id")],
        summary: "Remove a document and all its history, leaving no tombstone",
        options: [.collection]
    ) { arguments in
        let id = arguments.positional[1]
        try await withOpenDatabase(arguments.positional[0]) { database in
            let collection = try arguments.collectionName.existing(in: database)
            try await collection.purge(id: id)
        }
    }
}
