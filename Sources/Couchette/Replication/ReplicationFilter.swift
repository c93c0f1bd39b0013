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
