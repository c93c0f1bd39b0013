import Foundation
import Testing

@testable import Couchette

/// A listener that refuses large request bodies (413): the replicator splits its `_bulk_docs`
/// batches until they fit, and only a document too large on its own fails.
@Suite(.serialized, .tags(.concurrency, .sanitizeAddress)) struct HTTPRequestLimitTests {
    @Test func pushSplitsBatchesTheServerFindsTooLarge() async throws {
        try await withTwoDatabases { local, remote in
            let collection = try local.defaultCollection()
            let filler = String(repeating: "x", count: 400)
            try await saveDocuments(24, prefix: "s", in: collection)
            for n in 0..<24 {
                let doc = try #require(await collection.document(id: "s\(n)")).toMutable().setString(filler, forKey: "filler")
                try await collection.save(document: doc)
            }
            try await collection.save(
                document: MutableDocument(id: "huge").setString(String(repeating: "y", count: 20_000), forKey: "filler"))
            try await withListener([try remote.defaultCollection()], configure: { $0.maximumRequestBodySize = 4_000 }) { _, base in
                var config = ReplicatorConfiguration(target: URLEndpoint(url: URL(string: base + "/" + remote.name)!))
                config.addCollection(collection)
                config.replicatorType = .push
                let replicator = try Replicator(config: config)
                let events = replicator.documentReplications()
                #expect(try #require(await runToCompletion(replicator).last).error == nil)
                #expect(try await remote.defaultCollection().count == 24)
                #expect(try await remote.defaultCollection().document(id: "s7")?.string(forKey: "filler") == filler)
                var failed: [String: CouchetteError] = [:]
                while failed["huge"] == nil, let event = await events.next(timeout: .seconds(5)) {
                    for document in event.documents { if let error = document.error as? CouchetteError { failed[document.id] = error } }
                }
                #expect(failed.keys.sorted() == ["huge"])
                #expect(failed["huge"]?.code == .http(status: 413))
            }
        }
    }
}
