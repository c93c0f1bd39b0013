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

/// Decides whether one revision is pushed (``CollectionConfiguration/pushFilter``) or pulled
/// (``CollectionConfiguration/pullFilter``). Deleted documents pass through filters too, with
/// ``DocumentFlags/deleted``.
///
/// ```swift
/// var collectionConfig = CollectionConfiguration()
/// collectionConfig.pushFilter = { document, flags in
///     flags.contains(.deleted) || document.string(forKey: "owner") == "me"
/// }
/// ```
///
/// A filter runs on a replicator task: keep it fast and free of side effects. A revision it
/// refuses is skipped and not retried, even if the filter changes later.
public typealias ReplicationFilter = @Sendable (Document, DocumentFlags) -> Bool
