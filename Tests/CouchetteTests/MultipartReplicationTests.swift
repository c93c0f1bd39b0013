import Foundation
import Testing

@testable import Couchette

/// Replication between two Couchette databases over real loopback HTTP and HTTPS with content
/// large enough to travel as multipart (pushed as `multipart/related` PUTs, pulled from
/// `open_revs`), and the fallback after a `_bulk_docs` refused as too large (413).
@Suite(.serialized, .tags(.concurrency)) struct MultipartReplicationTests {
    private let large = Data((0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ $0 >> 9) })

    @Test(arguments: Transport.network)
    func largeBlobsGoBothWaysAsMultipart(over transport: Transport) async throws {
        try await withTwoDatabases(over: transport) { local, remote, endpoint in
            try await local.defaultCollection().save(
                document: MutableDocument(id: "up").setBlob(Blob(contentType: "application/x-up", data: large), forKey: "file"))
            let push = try #require(await runToCompletion(try Replicator(config: try makeConfig(local, endpoint, .push))).last)
            #expect(push.error == nil, "\(String(describing: push.error))")
            #expect(try await remote.defaultCollection().document(id: "up")?.blob(forKey: "file")?.content() == large)

            let reversed = Data(large.reversed())
            try await remote.defaultCollection().save(
                document: MutableDocument(id: "down").setArray(
                    MutableArrayObject().addBlob(Blob(contentType: "application/x-down", data: reversed)), forKey: "files"))
            let pull = try #require(await runToCompletion(try Replicator(config: try makeConfig(local, endpoint, .pull))).last)
            #expect(pull.error == nil, "\(String(describing: pull.error))")
            let pulled = try #require(try await local.defaultCollection().document(id: "down")?.array(forKey: "files")?.blob(at: 0))
            #expect(try await pulled.content() == reversed && pulled.contentType == "application/x-down")
            for database in [local, remote] { try await database.performMaintenance(type: .integrityCheck) }
        }
    }

    /// A listener that takes at most 40 KB of JSON: a revision with 50 KB of content (inline
    /// size) is refused by `_bulk_docs` with 413 and sent again as a multipart PUT, which the
    /// listener reads as it arrives.
    @Test func aRevisionRefusedAs413IsSentAgainAsMultipart() async throws {
        try await withTwoDatabases { local, remote in
            let content = Data(large.prefix(50_000))
            try await local.defaultCollection().save(
                document: MutableDocument(id: "mid").setBlob(Blob(contentType: "application/octet-stream", data: content), forKey: "b"))
            try await withListener([try remote.defaultCollection()], configure: { $0.maximumRequestBodySize = 40_000 }) { listener, _ in
                let push = try #require(
                    await runToCompletion(try Replicator(config: try makeConfig(local, URLEndpoint(url: listener.urls[0]), .push))).last)
                #expect(push.error == nil, "\(String(describing: push.error))")
                #expect(try await remote.defaultCollection().document(id: "mid")?.blob(forKey: "b")?.content() == content)
            }
        }
    }
}
