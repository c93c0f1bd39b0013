import Foundation

/// Where a database lives, how durable its commits are and how large it may grow.
///
/// ```swift
/// var config = DatabaseConfiguration(directory: "/var/lib/myapp")
/// config.fullSync = true               // survive power loss: the meta page is synced at each commit too
/// config.maximumSize = 512 << 20       // never grow data.mdb beyond 512 MiB
/// let db = try Database(name: "app", config: config)
/// ```
public struct DatabaseConfiguration: Sendable {
    /// The folder that holds `<name>.couchette/`. Default: the current directory.
    public var directory: String
    /// false (default, as in Couchbase Lite): data pages are synced at every commit but the LMDB
    /// meta page is not (`MDB_NOMETASYNC`); a process crash loses nothing, an OS crash can undo at
    /// most the last transaction and never corrupts. true: data and meta synced at every commit
    /// (the meta page written synchronously after the data's sync), so a commit that returned
    /// survives power loss.
    public var fullSync: Bool
    /// How many ancestor revision ids each branch of a document's history keeps (CouchDB's
    /// `revs_limit`), default 1,000 as CouchDB and PouchDB. Only ids are kept, about 20 bytes
    /// each; bodies of old revisions are always dropped. Replication sends these ids, so a peer
    /// recognises an edit made after up to this many local edits as a descendant, not a conflict.
    /// 1 to 1,000,000; ``Database/init(name:config:)`` throws `.invalidParameter` otherwise.
    ///
    /// ```swift
    /// var config = DatabaseConfiguration()
    /// config.maxRevisionHistory = 100   // a device that rarely syncs keeps less
    /// ```
    public var maxRevisionHistory: Int
    /// The most bytes the database file may take, at least 1 MiB (rounded down to 64 KiB units);
    /// nil (default): it grows as needed, up to 1 TiB.
    ///
    /// A write that does not fit throws ``CouchetteError/Code/full`` and changes nothing; what
    /// was committed before stays. The last sixteenth of the limit (256 KiB to 64 MiB) is kept for
    /// deletions and purges, which need room too, so a full database can always be emptied: after
    /// deleting or purging documents, writes fit again in the space they freed, and
    /// `performMaintenance(type: .compact)` shrinks the file. When this process already has the
    /// database open, the first opener's limit applies; the limit bounds this process's growth of
    /// the file, not another process's.
    public var maximumSize: Int?
    /// How long a commit may wait for writers expected to join it (group commit), default
    /// 200 µs to 2 ms.
    ///
    /// When the last commit carried several writes, or writes queued while it synced, the next
    /// one expects as many writers again: it opens its transaction with the writes at hand,
    /// applies them, and waits for the others — as long as the last commit took, kept within
    /// this range — so that concurrent savers share one disk sync instead of splitting over two.
    /// A single task saving in a loop never waits. `.zero ... .zero` never waits for anyone: each
    /// commit takes only what is queued when it begins. At most 60 s;
    /// ``Database/init(name:config:)`` throws `.invalidParameter` for a longer or negative wait.
    ///
    /// ```swift
    /// var config = DatabaseConfiguration()
    /// config.groupCommitWait = .zero ... .zero   // latency first: never hold a commit back
    /// ```
    public var groupCommitWait: ClosedRange<Duration>

    /// The default configuration: databases in `directory` (the current directory when nil), no full
    /// sync, CouchDB's 1,000-revision history, a size that grows as needed, and group commits that
    /// wait 200 µs to 2 ms for expected writers.
    public init(directory: String? = nil) {
        self.directory = directory ?? FileManager.default.currentDirectoryPath
        self.fullSync = false
        self.maxRevisionHistory = RevisionTree.defaultHistoryLimit
        self.maximumSize = nil
        self.groupCommitWait = GroupCommitPacing.defaultWait
    }
}
