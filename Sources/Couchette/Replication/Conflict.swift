/// A document that replication left with two live revisions: the one here and the one pulled.
///
/// ```swift
/// struct PreferRemote: ConflictResolverProtocol {
///     func resolve(conflict: Conflict) -> Document? { conflict.remoteDocument }
/// }
/// ```
public struct Conflict: Sendable {
    /// The id of the conflicted document, in the collection being pulled into.
    public let documentID: String
    /// The local revision (nil when it is a deletion).
    public let localDocument: Document?
    /// The pulled revision (nil when it is a deletion).
    public let remoteDocument: Document?
}
