import Couchette
import Foundation

/// `couchette blob DB ID KEY [--output FILE] [--collection C]`
enum BlobCommand {
    static let command = Command(
        name: "blob",
        arguments: [
            .database, .init("ID", "the document's id"),
            .init("KEY", "the blob property: a name, or a path such as photos[1].image"),
        ],
        summary: "Write a blob's content to standard output or a file",
        discussion: """
            Streams the content in chunks, so blobs of any size use little memory. A property that
            is not a blob (or a missing document) is an error. Entries of CouchDB's _attachments
            are blobs too: '_attachments.photo.jpg' is not a path, use '_attachments[photo.jpg]'.
            """,
        options: [.collection, .init(name: "output", valueName: "FILE", help: "write to FILE instead of standard output")]
    ) { arguments in
        let (id, key) = (arguments.positional[1], arguments.positional[2])
        try await withOpenDatabase(arguments.positional[0]) { database in
            let collection = try arguments.collectionName.existing(in: database)
            guard let document = try await collection.document(id: id) else {
                throw ToolError("no document '\(id)' in \(collection.fullName)")
            }
            guard let blob = PropertyPath.blob(key, in: document) else {
                throw ToolError("property '\(key)' of document '\(id)' is not a blob")
            }
            let output: FileHandle
            if let path = arguments.options["output"], path != "-" {
                guard FileManager.default.createFile(atPath: path, contents: nil), let handle = FileHandle(forWritingAtPath: path) else {
                    throw ToolError("cannot write \(path)")
                }
                output = handle
            } else {
                Terminal.flushStandardOutput()
                output = FileHandle.standardOutput
            }
            defer { if output !== FileHandle.standardOutput { try? output.close() } }
            for try await chunk in blob.contentStream() { try output.write(contentsOf: chunk) }
        }
    }
}

/// `couchette attach DB ID KEY FILE [--type MIME] [--collection C]`
enum AttachCommand {
    static let command = Command(
        name: "attach",
        arguments: [
            .database, .init("ID", "the document's id (created when missing)"),
            .init("KEY", "the top-level property to set"), .init("FILE", "the file to store"),
        ],
        summary: "Store a file as a blob property of a document; prints the new revision",
        discussion: "The file is streamed into the database, never loaded whole. Other properties are kept.",
        options: [.collection, .init(name: "type", valueName: "MIME", help: "the content type (default: application/octet-stream)")]
    ) { arguments in
        let (id, key, file) = (arguments.positional[1], arguments.positional[2], arguments.positional[3])
        let blob: Blob
        do {
            blob = try Blob(contentType: arguments.options["type"] ?? "application/octet-stream", fileURL: URL(fileURLWithPath: file))
        } catch let error as CouchetteError {
            throw ToolError(error.message)
        }
        try await withOpenDatabase(arguments.positional[0], create: true) { database in
            let collection = try await arguments.collectionName.created(in: database)
            let document = try await collection.document(id: id)?.toMutable() ?? MutableDocument(id: id)
            try await collection.save(document: document.setBlob(blob, forKey: key))
            print(document.revisionID ?? "")
        }
    }
}

/// Resolves property paths such as `a.b[2].c` (and `name[key]` for a key containing dots) to the
/// blob they name.
enum PropertyPath {
    private enum Step {
        case key(String)
        case index(Int)
    }

    static func blob(_ path: String, in document: Document) -> Blob? {
        var steps: [Step] = []
        var rest = Substring(path)
        while !rest.isEmpty {
            if rest.first == "[" {
                guard let close = rest.firstIndex(of: "]") else { return nil }
                let inside = String(rest[rest.index(after: rest.startIndex)..<close])
                steps.append(Int(inside).map(Step.index) ?? .key(inside))
                rest = rest[rest.index(after: close)...]
            } else {
                if rest.first == "." { rest = rest.dropFirst() }
                let end = rest.firstIndex { $0 == "." || $0 == "[" } ?? rest.endIndex
                steps.append(.key(String(rest[..<end])))
                rest = rest[end...]
            }
        }
        guard let last = steps.popLast() else { return nil }
        var container: Any = document
        for step in steps {
            switch (step, container) {
            case (.key(let key), let dictionary as any DictionaryProtocol): container = dictionary.value(forKey: key) as Any
            case (.index(let index), let array as any ArrayProtocol): container = array.value(at: index) as Any
            default: return nil
            }
        }
        switch (last, container) {
        case (.key(let key), let dictionary as any DictionaryProtocol): return dictionary.blob(forKey: key)
        case (.index(let index), let array as any ArrayProtocol): return array.blob(at: index)
        default: return nil
        }
    }
}
