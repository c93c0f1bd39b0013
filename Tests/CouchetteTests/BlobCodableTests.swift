import Foundation
import Testing

@testable import Couchette

/// A model with `Blob`, `Blob?` and `[Blob]` properties.
final class Attachmented: Codable {
    @DocumentID var id: String?
    var title: String
    var cover: Blob
    var thumbnail: Blob?
    var pages: [Blob]

    init(id: String? = nil, title: String, cover: Blob, thumbnail: Blob? = nil, pages: [Blob] = []) {
        self.id = id
        self.title = title
        self.cover = cover
        self.thumbnail = thumbnail
        self.pages = pages
    }
}

/// `Blob` fields in Codable models: saved with the model, decoded back, content readable.
@Suite struct BlobCodableTests {
    @Test func modelBlobsRoundTrip() async throws {
        try await withDatabase { database, _ in
            let collection = try database.defaultCollection()
            let pages = (1...3).map { Blob(contentType: "text/plain", data: Data("page \($0)".utf8)) }
            let book = Attachmented(
                id: "book", title: "Blobs", cover: Blob(contentType: "image/png", data: Data("cover".utf8)), pages: pages)
            try await collection.save(from: book)
            #expect(book.cover.digest != nil)
            #expect(pages.allSatisfy { $0.digest != nil })

            let read = try #require(try await collection.document(id: "book", as: Attachmented.self))
            #expect(read.title == "Blobs")
            #expect(read.thumbnail == nil)
            #expect(read.cover == book.cover)
            #expect(read.cover.contentType == "image/png")
            #expect(try await read.cover.content() == Data("cover".utf8))
            #expect(read.pages.count == 3)
            for (index, page) in read.pages.enumerated() {
                #expect(try await page.content() == Data("page \(index + 1)".utf8))
            }
            // The document holds Couchbase Lite's blob dictionaries.
            let document = try #require(try await collection.document(id: "book"))
            #expect(document.blob(forKey: "cover") == book.cover)
            #expect(document.array(forKey: "pages")?.blob(at: 2) == pages[2])

            read.thumbnail = Blob(contentType: "image/png", data: Data("thumb".utf8))
            try await collection.save(from: read)
            let again = try #require(try await collection.document(id: "book", as: Attachmented.self))
            #expect(try await again.thumbnail?.content() == Data("thumb".utf8))
            try await database.performMaintenance(type: .integrityCheck)
        }
    }

    @Test func modelBlobsInABatch() async throws {
        try await withDatabase { database, _ in
            let collection = try database.defaultCollection()
            let book = Attachmented(id: "batched", title: "b", cover: Blob(contentType: "text/plain", data: Data("c".utf8)))
            try await database.inBatch { batch in try batch.save(from: book, in: collection) }
            let read = try #require(try await collection.document(id: "batched", as: Attachmented.self))
            #expect(try await read.cover.content() == Data("c".utf8))
        }
    }

    final class WithData: Codable {
        @DocumentID var id: String?
        var raw = Data([1, 2, 3])
    }

    @Test func rawDataStillSuggestsBlob() async throws {
        try await withDatabase { database, _ in
            let message = await expectCouchetteError(.invalidParameter) { try await database.defaultCollection().save(from: WithData()) }
            #expect(message?.contains("use a Blob") == true)
        }
    }
}
