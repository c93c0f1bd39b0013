import Couchette
import Foundation

/// `couchette write-loop DIR NAME`: saves documents `doc-0`, `doc-1`, … until killed, printing
/// `saved doc-N` after each save has returned (`--prefix` replaces `doc`). The crash test kills it
/// with SIGKILL and checks that every reported document survived.
enum WriteLoopCommand {
    static let command = Command(
        name: "write-loop", arguments: [.init("DIRECTORY"), .init("NAME")],
        summary: "Save numbered documents until killed (used by the crash test)",
        options: [
            .init(name: "limit", valueName: "N", help: "stop after N documents (default: never)"),
            .init(name: "prefix", valueName: "P", help: "name documents P-0, P-1, … (default: doc)"),
            .init(
                name: "collection", valueName: "C",
                help: "save into collection C of the default scope, created at start (default: the default collection)"),
            .init(name: "blobs", valueName: nil, help: "give each document a blob of 4 to 260 KB (content derived from its number)"),
        ],
        isHidden: true
    ) { arguments in
        let database = try Database(
            name: arguments.positional[1],
            config: DatabaseConfiguration(directory: arguments.positional[0]))
        let collection =
            if let name = arguments.options["collection"] {
                try await database.createCollection(name: name)
            } else {
                try database.defaultCollection()
            }
        let limit = arguments.options["limit"].flatMap(Int.init) ?? Int.max
        let prefix = arguments.options["prefix"] ?? "doc"
        let withBlobs = arguments.flag("blobs")
        var number = 0
        while number < limit {
            let document = MutableDocument(id: "\(prefix)-\(number)")
                .setInt(number, forKey: "n")
                .setString(String(repeating: "x", count: number % 500), forKey: "padding")
            if withBlobs {
                let content =
                    Data("\(prefix)-\(number) ".utf8)
                    + Data(repeating: UInt8(truncatingIfNeeded: number), count: 4096 + (number % 64) * 4096)
                document.setBlob(Blob(contentType: "application/octet-stream", data: content), forKey: "blob")
            }
            try await collection.save(document: document)
            emit("saved \(prefix)-\(number)")
            number += 1
        }
        try await database.close()
    }
}
