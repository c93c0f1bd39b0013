import Foundation

/// How a save or delete treats a document that changed since it was read.
///
/// ```swift
/// let edit = stored.toMutable().setInt(2, forKey: "version")
/// if try await collection.save(document: edit, concurrencyControl: .failOnConflict) == false {
///     // someone saved the document since `stored` was read: read it again and redo the edit
/// }
/// ```
public enum ConcurrencyControl: Sendable {
    /// Overwrite: the write becomes the newest revision regardless.
    case lastWriteWins
    /// Refuse: the call returns `false` (or a batch throws `.conflict`) and nothing is written.
    case failOnConflict
}
