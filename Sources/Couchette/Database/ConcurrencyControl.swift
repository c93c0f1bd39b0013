import Foundation

/// How a save or delete treats a document that changed since it was read.
public enum ConcurrencyControl: Sendable {
    /// Overwrite: the write becomes the newest revision regardless.
    case lastWriteWins
    /// Refuse: the call returns `false` (or a batch throws `.conflict`) and nothing is written.
    case failOnConflict
}
