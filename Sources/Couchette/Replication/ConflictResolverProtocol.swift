/// Resolves conflicts found after pulling (Couchbase Lite's protocol).
///
/// Return the document to keep — `localDocument`, `remoteDocument`, or a merge of the two (any
/// `Document`, for example `Document(mutable)`) — or nil to delete the document. The resolution
/// is written as a new revision on the winning branch and the other branches are closed with
/// tombstones, so it replicates to the other side. A resolver that returns the same answer on
/// both sides (a deterministic merge) makes both databases converge to identical revisions.
///
/// ```swift
/// struct MergeTags: ConflictResolverProtocol {
///     func resolve(conflict: Conflict) -> Document? {
///         guard let local = conflict.localDocument, let remote = conflict.remoteDocument else { return nil }
///         let merged = local.toMutable()
///         let tags = Set(local.array(forKey: "tags")?.toArray() as? [String] ?? [])
///             .union(remote.array(forKey: "tags")?.toArray() as? [String] ?? [])
///         merged.setValue(tags.sorted(), forKey: "tags")
///         return Document(merged)
///     }
/// }
/// ```
///
/// Without a resolver the default applies: the revision CouchDB's rule makes the winner (a live
/// one before a deletion, then the higher generation, then the higher revision id) is kept and
/// the others are closed, which every peer computes identically.
public protocol ConflictResolverProtocol: Sendable {
    /// Chooses the document to keep for `conflict`, or nil to delete it. Runs on a replicator task
    /// after each pulled batch; the same conflict may be offered again if the replicator stops before
    /// the resolution is saved, so answer deterministically.
    func resolve(conflict: Conflict) -> Document?
}
