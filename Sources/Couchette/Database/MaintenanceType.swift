import Foundation

/// Housekeeping that ``Database/performMaintenance(type:)`` can run.
///
/// ```swift
/// try await db.performMaintenance(type: .compact)
/// ```
public enum MaintenanceType: Sendable {
    /// Rewrites the file without free pages, returning space to the file system.
    case compact
    /// Rebuilds every index from the documents.
    case reindex
    /// Reads every document, revision tree and sequence entry and checks that they agree.
    case integrityCheck
}
