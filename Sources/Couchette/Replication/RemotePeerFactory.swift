import Foundation

/// Makes the HTTP peer for one collection of a ``URLEndpoint`` replication: the seam between
/// the replication engine and the HTTP client. Creating it does no network I/O.
///
/// - Throws: `.unsupported` until the HTTP client peer is built into this seam.
func makeRemotePeer(url: URL, collection: Collection, config: ReplicatorConfiguration,
                    collectionConfig: CollectionConfiguration) throws -> any ReplicationPeer {
    throw CouchetteError(.unsupported, "HTTP replication to \(url.host ?? url.absoluteString) is not available in this build; use DatabaseEndpoint")
}
