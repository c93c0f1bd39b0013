import CouchetteBenchmarks
import Foundation
import Testing

@testable import Couchette

/// Blobs and CouchDB attachments in replication: two Couchette databases in process and over
/// HTTP (both roles; large content as multipart, small inline), attachment content sent only
/// when the peer lacks it (bytes counted on the wire), and CouchDB's own `_bulk_get` answers with inline attachments (transcript `a10`).
@Suite(.serialized, .tags(.concurrency)) struct BlobReplicationTests {
    private let big = Data((0..<200_000).map { UInt8(truncatingIfNeeded: $0 &* 13 &+ $0 >> 7) })

    /// A document with a blob at the top level, one nested and three in an array.
    private func saveBlobDocument(_ id: String, in collection: Collection) async throws {
        let array = MutableArrayObject()
        for index in 0..<3 { array.addBlob(Blob(contentType: "text/plain", data: Data("\(id) element \(index)".utf8))) }
        let doc = MutableDocument(id: id)
            .setString(id, forKey: "title")
            .setBlob(Blob(contentType: "application/octet-stream", data: big), forKey: "big")
            .setDictionary(
                MutableDictionaryObject().setBlob(Blob(contentType: "image/png", data: Data("\(id) png".utf8)), forKey: "image"),
                forKey: "nested"
            )
            .setArray(array, forKey: "list")
        try await collection.save(document: doc)
    }

    private func expectBlobDocument(_ id: String, in collection: Collection) async throws {
        let doc = try #require(try await collection.document(id: id))
        #expect(try await doc.blob(forKey: "big")?.content() == big)
        #expect(try await doc["nested"]["image"].blob?.content() == Data("\(id) png".utf8))
        for index in 0..<3 {
            #expect(try await doc.array(forKey: "list")?.blob(at: index)?.content() == Data("\(id) element \(index)".utf8))
        }
        #expect(doc.dictionary(forKey: "_attachments") == nil)  // blob_/… attachments are folded back
    }

    private func config(_ local: Database, _ target: any Endpoint, _ type: ReplicatorType) throws -> ReplicatorConfiguration {
        var config = ReplicatorConfiguration(target: target)
        config.addCollection(try local.defaultCollection())
        config.replicatorType = type
        return config
    }

    @Test func blobsReplicateInProcessBothWays() async throws {
        try await withTwoDatabases { local, remote in
            try await saveBlobDocument("a", in: try local.defaultCollection())
            try await saveBlobDocument("b", in: try remote.defaultCollection())
            let replicator = try Replicator(config: try config(local, DatabaseEndpoint(database: remote), .pushAndPull))
            let last = try #require(await runToCompletion(replicator).last)
            #expect(last.error == nil, "\(String(describing: last.error))")
            for database in [local, remote] {
                try await expectBlobDocument("a", in: try database.defaultCollection())
                try await expectBlobDocument("b", in: try database.defaultCollection())
                try await database.performMaintenance(type: .integrityCheck)
            }
        }
    }

    @Test func blobsReplicateOverHTTPBothWaysAndUnchangedContentIsNotSentAgain() async throws {
        try await withTwoDatabases { local, remote in
            try await saveBlobDocument("a", in: try local.defaultCollection())
            try await withListener([try remote.defaultCollection()]) { listener, _ in
                let proxy = try CouchDBStyleProxy(upstreamPort: try #require(listener.port))
                defer { proxy.stop() }
                let url = try #require(URL(string: "http://127.0.0.1:\(proxy.port)/remote"))
                let push = try Replicator(config: try config(local, URLEndpoint(url: url), .push))
                #expect(try #require(await runToCompletion(push).last).error == nil)
                try await expectBlobDocument("a", in: try remote.defaultCollection())
                let firstPush = proxy.forwardedBodyBytes
                // The content went once, as a multipart/related part: base64 would be 4/3 of it.
                #expect(firstPush > big.count && firstPush < big.count * 23 / 20, "first push carried \(firstPush) bytes")

                // A body-only edit: the second push sends stubs, not the content again.
                let edit = try #require(try await local.defaultCollection().document(id: "a")).toMutable().setString(
                    "edited", forKey: "title")
                try await local.defaultCollection().save(document: edit)
                #expect(try #require(await runToCompletion(push).last).error == nil)
                let secondPush = proxy.forwardedBodyBytes - firstPush
                #expect(secondPush < 20_000, "second push carried \(secondPush) bytes")
                #expect(try await remote.defaultCollection().document(id: "a")?.string(forKey: "title") == "edited")
                try await expectBlobDocument("a", in: try remote.defaultCollection())

                // The other way: a new document pulled, an edited one pulled without its content.
                try await saveBlobDocument("b", in: try remote.defaultCollection())
                let pull = try Replicator(config: try config(local, URLEndpoint(url: url), .pull))
                let beforeFirstPull = proxy.forwardedBodyBytes
                #expect(try #require(await runToCompletion(pull).last).error == nil)
                try await expectBlobDocument("b", in: try local.defaultCollection())
                // Pulled from open_revs as multipart, not as base64 in _bulk_get.
                let firstPull = proxy.forwardedBodyBytes - beforeFirstPull
                #expect(firstPull > big.count && firstPull < big.count * 23 / 20, "first pull carried \(firstPull) bytes")
                let remoteEdit = try #require(try await remote.defaultCollection().document(id: "b")).toMutable().setString(
                    "again", forKey: "title")
                try await remote.defaultCollection().save(document: remoteEdit)
                let beforePull = proxy.forwardedBodyBytes
                #expect(try #require(await runToCompletion(pull).last).error == nil)
                #expect(proxy.forwardedBodyBytes - beforePull < 20_000)
                #expect(try await local.defaultCollection().document(id: "b")?.string(forKey: "title") == "again")
                try await expectBlobDocument("b", in: try local.defaultCollection())

                // The listener serves a blob as an attachment, by its blob_/ name.
                let reply = try await httpRequest("GET", "http://127.0.0.1:\(try #require(listener.port))/remote/b/blob_/nested/image")
                #expect(reply.status == 200 && reply.text == "b png")
                #expect(reply.headers["content-type"] == "image/png")
                #expect(try await httpRequest("GET", "http://127.0.0.1:\(try #require(listener.port))/remote/b/blob_/nope").status == 404)
                for database in [local, remote] { try await database.performMaintenance(type: .integrityCheck) }
            }
        }
    }

    /// CouchDB 3.5's `_bulk_get` answers with `attachments=true` (transcript a10, exchanges 7 and
    /// 8): inline base64 content lands as blobs keeping CouchDB's md5 digests; with `atts_since`
    /// a stub for content already stored is accepted.
    @Test func couchDBInlineAttachmentsFromTheTranscriptAreStored() async throws {
        let exchanges = try Transcript.load("a10-bulk-get")
        let inline = try #require(exchanges.first { $0.seq == 7 })
        let since = try #require(exchanges.first { $0.seq == 8 })
        func documents(_ exchange: TranscriptExchange) throws -> [Value] {
            guard case .array(let results)? = exchange.responseJSON?["results"] else { return [] }
            return results.flatMap { result -> [Value] in
                guard case .array(let docs)? = result["docs"] else { return [] }
                return docs.compactMap { $0["ok"] }
            }
        }
        try await withDatabase { database, _ in
            let peer = try LocalPeer(collection: try database.defaultCollection())
            let revisions = try documents(inline).map(CouchDBDocument.revision(from:))
            #expect(!revisions.isEmpty && revisions.allSatisfy { !$0.attachments.isEmpty })
            let failures = try await peer.bulkDocs(revisions)
            #expect(failures.isEmpty, "\(failures.map(\.error.message))")
            let stored = try #require(try await database.defaultCollection().document(id: "att"))
            let attachments = try #require(stored.dictionary(forKey: "_attachments"))
            #expect(Set(attachments.keys) == ["one.txt", "two.bin"])
            for name in attachments.keys {
                let blob = try #require(attachments.blob(forKey: name))
                #expect(blob.digest?.hasPrefix("md5-") == true)
                #expect(UInt64(try await blob.content().count) == blob.length)
            }
            // Exchange 8 sends one.txt as a stub (atts_since) and two.bin inline: both accepted.
            let partial = try documents(since).map(CouchDBDocument.revision(from:))
            #expect(partial.contains { $0.attachments.count == 1 })
            #expect(try await peer.bulkDocs(partial).isEmpty)
            try await database.performMaintenance(type: .integrityCheck)

            // Served back as CouchDB sends it: stubs by default, data with attachments=true.
            let fetched = try await peer.bulkGet([
                RevisionRequest(id: "att", revisionID: try #require(stored.revisionID), knownAncestors: [])
            ])
            guard case .found(let revision)? = fetched.first else { Issue.record("not fetched"); return }
            let json = CouchDBDocument.json(revision, includeHistory: true)
            #expect(json["_attachments"]?["one.txt"]?["data"] != nil)
            #expect(
                json["_attachments"]?["one.txt"]?["digest"]
                    == attachments.dictionary(forKey: "one.txt").map { .string($0.string(forKey: "digest") ?? "") })

            // Content that does not match its digest is refused.
            var tampered = try #require(revisions.first)
            tampered.revisionID = "9-00000000000000000000000000000000"
            tampered.history = [tampered.revisionID] + tampered.history
            tampered.attachments = tampered.attachments.mapValues { _ in .data(Data("not it".utf8)) }
            let errors = try await peer.bulkDocs([tampered])
            #expect(errors.count == 1 && errors.first?.error.code == .invalidParameter)
        }
    }
}
