import Couchette
import Foundation

/// `couchette export DB [--collection C] [--output FILE]`
enum ExportCommand {
    static let command = Command(
        name: "export", arguments: [.database],
        summary: "Write a collection's documents as JSON lines, each with its _id and _rev",
        discussion: """
            One line per live document (deleted ones are left out), ordered by id, from one snapshot
            of the database: {"_id":…,"_rev":…, then the properties}. 'import' reads it back:
            export, then import into a new database, reproduces the same documents, and the same
            revision ids for documents written once. Blobs appear as their blob dictionaries; with
            --with-blobs each also carries its content in base64 ('data'), which 'import' turns
            back into a blob (contents are then held in memory one blob at a time).
            """,
        options: [
            .collection,
            .init(name: "output", valueName: "FILE", help: "write to FILE instead of standard output"),
            .init(name: "with-blobs", valueName: nil, help: "inline blob contents as base64"),
        ]
    ) { arguments in
        let collectionName = try arguments.collectionName
        try await withOpenDatabase(arguments.positional[0]) { database in
            let collection = try collectionName.existing(in: database)
            let output = try OutputFile(path: arguments.options["output"])
            let count = try await export(collection, to: output, withBlobs: arguments.flag("with-blobs"))
            try output.close()
            if arguments.options["output"] != nil, arguments.options["output"] != "-" {
                print("Exported \(count) document\(count == 1 ? "" : "s") from \(collection.fullName)")
            }
        }
    }

    /// Writes every document of `collection` as a JSON line; returns how many.
    static func export(_ collection: Collection, to output: OutputFile, withBlobs: Bool = false) async throws -> Int {
        let query = try collection.database.createQuery(
            "SELECT META(d).id, META(d).revisionID, d FROM \(quoted(collection)) AS d ORDER BY META(d).id")
        var count = 0
        for row in try await query.execute() {
            guard let id = row.string(at: 0) else { continue }
            var body = row.dictionary(at: 2)?.toJSON() ?? "{}"
            if withBlobs, let properties = row.dictionary(at: 2)?.toDictionary() {
                let inlined = try await InlineBlobs.inlined(properties, in: collection.database, path: "")
                body = MutableDictionaryObject(data: inlined as? [String: Any] ?? [:]).toJSON()
            }
            try output.writeLine(JSONText.document(id: id, revisionID: row.string(at: 1), body: body))
            count += 1
        }
        return count
    }

    /// `scope`.`name` with backquotes, so any legal collection name can appear in a query.
    static func quoted(_ collection: Collection) -> String {
        "`\(collection.scope.name)`.`\(collection.name)`"
    }
}
