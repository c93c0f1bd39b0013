/// Which way a ``Replicator`` moves documents.
///
/// ```swift
/// config.replicatorType = .pull          // a read-only replica of the server
/// ```
public enum ReplicatorType: Sendable {
    /// Both ways: local changes go to the target and the target's changes come back.
    case pushAndPull
    /// Local changes go to the target only.
    case push
    /// The target's changes come here only.
    case pull

    var pushes: Bool { self != .pull }
    var pulls: Bool { self != .push }
}
