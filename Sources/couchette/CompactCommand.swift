import Couchette
import Foundation

/// `couchette compact DB`
enum CompactCommand {
    static let command = Command(
        name: "compact", arguments: [.database],
        summary: "Rewrite the database file without free pages, returning space to the file system",
        discussion: "Fails (exit 1) while another process has the database open."
    ) { arguments in
        let location = try DatabaseLocation(arguments.positional[0])
        try await withOpenDatabase(arguments.positional[0]) { database in
            let before = DiskSize.of(folder: location.folder)
            try await database.performMaintenance(type: .compact)
            let after = DiskSize.of(folder: location.folder)
            print("Compacted \(database.name): \(DiskSize.describe(before)) → \(DiskSize.describe(after))")
        }
    }
}
