/// What a replication filter and a ``ReplicatedDocument`` learn about a document besides its body.
///
/// ```swift
/// collectionConfig.pullFilter = { document, flags in
///     !flags.contains(.deleted)          // keep local copies of documents deleted on the server
/// }
/// ```
public struct DocumentFlags: OptionSet, Sendable, Hashable {
    /// The flags as bits: ``deleted`` is bit 0, ``accessRemoved`` bit 1.
    public let rawValue: Int

    /// Flags from their bits, as `OptionSet` requires; use ``deleted`` and ``accessRemoved`` instead.
    public init(rawValue: Int) { self.rawValue = rawValue }

    /// The revision is a deletion (a tombstone): its body is empty.
    public static let deleted = DocumentFlags(rawValue: 1 << 0)
    /// The user lost access to the document on the server (Sync Gateway); never set by CouchDB peers.
    public static let accessRemoved = DocumentFlags(rawValue: 1 << 1)
}
