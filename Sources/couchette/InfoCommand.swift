import Couchette
import Foundation

/// `couchette info DB`
enum InfoCommand {
    static let command = Command(
        name: "info", arguments: [.database],
        summary: "Show a database's path, size on disk, collections with document counts, and indexes"
    ) { arguments in
        try await withOpenDatabase(arguments.positional[0]) { database in
            print(try await report(database))
        }
    }

    static func report(_ database: Database) async throws -> String {
        let size = DiskSize.of(folder: database.path)
        var text = """
            Database:    \(database.name)
            Path:        \(database.path)
            Size:        \(DiskSize.describe(size))

            """
        let collections = try database.scopes().flatMap { try $0.collections() }
        text += "Collections: \(collections.count)\n"
        let width = collections.map(\.fullName.count).max() ?? 0
        for collection in collections {
            let count = try await collection.count
            text +=
                "  " + collection.fullName.padding(toLength: width, withPad: " ", startingAt: 0)
                + "  \(count) document\(count == 1 ? "" : "s")\n"
        }
        let indexes = try await collections.asyncFlatMap { collection in
            try await IndexList.names(of: collection).map { "\(collection.fullName): \($0)" }
        }
        text += "Indexes:     \(indexes.isEmpty ? "none" : String(indexes.count))"
        for index in indexes { text += "\n  " + index }
        return text
    }
}

/// The indexes of a collection: the one place `info` and the shell's `.indexes` ask.
enum IndexList {
    static func names(of collection: Collection) async throws -> [String] { try await collection.indexes() }
}

extension Array {
    func asyncFlatMap<T>(_ transform: (Element) async throws -> [T]) async rethrows -> [T] {
        var result: [T] = []
        for element in self { result += try await transform(element) }
        return result
    }
}

/// Sizes of database folders.
enum DiskSize {
    /// The bytes the folder's files take.
    static func of(folder: String) -> UInt64 {
        let files = (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []
        return files.reduce(0) { total, file in
            let attributes = try? FileManager.default.attributesOfItem(atPath: folder + "/" + file)
            return total + ((attributes?[.size] as? NSNumber)?.uint64Value ?? 0)
        }
    }

    /// `1.5 MB (1572864 bytes)`.
    static func describe(_ bytes: UInt64) -> String {
        let units = ["bytes", "KB", "MB", "GB", "TB"]
        var value = Double(bytes)
        var unit = 0
        while value >= 1024 && unit < units.count - 1 {
            value /= 1024
            unit += 1
        }
        return unit == 0 ? "\(bytes) bytes" : String(format: "%.1f %@ (%llu bytes)", value, units[unit], bytes)
    }
}
