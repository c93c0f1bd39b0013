import Couchette
import Foundation

/// `couchette check DB`
enum CheckCommand {
    static let command = Command(
        name: "check", arguments: [.database],
        summary: "Check the database's integrity: documents, revision trees and sequences agree",
        discussion: "Prints 'ok' and exits 0, or names the first inconsistency and exits 1."
    ) { arguments in
        try await withOpenDatabase(arguments.positional[0]) { database in
            try await database.performMaintenance(type: .integrityCheck)
            print("ok")
        }
    }
}
