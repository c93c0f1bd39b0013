/// What a replication filter and a ``ReplicatedDocument`` learn about a document besides its body.
public struct DocumentFlags: OptionSet, Sendable, Hashable {
    public let rawValue: Int

    public init(rawValue: Int) { self.rawValue = rawValue }

    /// The revision is a deletion (a tombstone): its body is empty.
    public static let deleted = DocumentFlags(rawValue: 1 << 0)
    /// The user lost access to the document on the server (Sync Gateway); never set by CouchDB peers.
    public static let accessRemoved = DocumentFlags(rawValue: 1 << 1)
}
