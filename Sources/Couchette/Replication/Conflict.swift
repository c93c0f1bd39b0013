/// A document that replication left with two live revisions: the one here and the one pulled.
public struct Conflict: Sendable {
    public let documentID: String
    /// The local revision (nil when it is a deletion).
    public let localDocument: Document?
    /// The pulled revision (nil when it is a deletion).
    public let remoteDocument: Document?
}
