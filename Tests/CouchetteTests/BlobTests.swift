import Foundation
import Testing

@testable import Couchette

/// Couchbase Lite's blob cases: round trips at the top level, nested and in arrays, equality by
/// digest, `getBlob(properties:)`, and compaction deleting content no revision references.
@Suite struct BlobTests {
    private let hello = Data("hello, blob".utf8)

    private func blobFileCount(_ database: Database) -> Int {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: database.path + "blobs")) ?? []
        return names.filter { !$0.hasPrefix(".") }.count
    }

    @Test func topLevelBlobRoundTrips() async throws {
        try await withDatabase { database, _ in
            let collection = try database.defaultCollection()
            let blob = Blob(contentType: "text/plain", data: hello)
            #expect(blob.digest == nil)
            try await collection.save(document: MutableDocument(id: "doc").setBlob(blob, forKey: "text"))
            #expect(blob.digest == (try ContentDigest.sha1(of: hello)))
            #expect(blob.digest?.hasPrefix("sha1-") == true)

            let stored = try #require(try await collection.document(id: "doc"))
            let read = try #require(stored.blob(forKey: "text"))
            #expect(read.contentType == "text/plain")
            #expect(read.length == UInt64(hello.count))
            #expect(read.digest == blob.digest)
            #expect(read == blob)
            #expect(try await read.content() == hello)
            #expect(stored["text"].blob == read)
            let dictionary = try #require(stored.dictionary(forKey: "text")?.toDictionary())
            #expect(Blob.isBlob(properties: dictionary))
            #expect(dictionary["@type"] as? String == "blob")
            #expect(dictionary["length"] as? Int == hello.count)
            #expect(dictionary["content_type"] as? String == "text/plain")
            #expect(read.toJSON().contains("\"@type\":\"blob\""))
            #expect(stored.blob(forKey: "missing") == nil)
        }
    }

    @Test func nestedBlobRoundTrips() async throws {
        try await withDatabase { database, _ in
            let collection = try database.defaultCollection()
            let inner = MutableDictionaryObject().setBlob(Blob(contentType: "image/png", data: hello), forKey: "image")
            let doc = MutableDocument(id: "doc").setDictionary(
                MutableDictionaryObject().setDictionary(inner, forKey: "photo"), forKey: "album")
            try await collection.save(document: doc)
            let stored = try #require(try await collection.document(id: "doc"))
            let blob = try #require(stored["album"]["photo"]["image"].blob)
            #expect(blob.contentType == "image/png")
            #expect(try await blob.content() == hello)
            #expect(stored.dictionary(forKey: "album")?.dictionary(forKey: "photo")?.blob(forKey: "image") == blob)
        }
    }

    @Test func threeBlobsInAnArrayKeepTheirOrder() async throws {
        try await withDatabase { database, _ in
            let collection = try database.defaultCollection()
            let contents = ["one", "two", "three"].map { Data($0.utf8) }
            let array = MutableArrayObject()
            for content in contents { array.addBlob(Blob(contentType: "text/plain", data: content)) }
            try await collection.save(document: MutableDocument(id: "mutable").setArray(array, forKey: "blobs"))
            // Plain Swift arrays of unsaved blobs work too.
            let plain = contents.map { Blob(contentType: "text/plain", data: $0) }
            try await collection.save(document: MutableDocument(id: "plain").setValue(plain, forKey: "blobs"))
            for id in ["mutable", "plain"] {
                let stored = try #require(try await collection.document(id: id))
                let blobs = try #require(stored.array(forKey: "blobs"))
                #expect(blobs.count == 3)
                for (index, content) in contents.enumerated() {
                    #expect(try await blobs.blob(at: index)?.content() == content)
                }
            }
            #expect(blobFileCount(database) == 3)  // equal contents stored once
        }
    }

    @Test func blobFromFileStreamsInAndOut() async throws {
        try await withDatabase { database, directory in
            let collection = try database.defaultCollection()
            let url = URL(fileURLWithPath: directory.path + "/input.bin")
            let content = Data((0..<(1 << 20) + 12345).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ $0 >> 9) })
            try content.write(to: url)
            let blob = try Blob(contentType: "application/octet-stream", fileURL: url)
            #expect(blob.length == UInt64(content.count))
            try await collection.save(document: MutableDocument(id: "file").setBlob(blob, forKey: "data"))
            try FileManager.default.removeItem(at: url)  // the store has its own copy

            let read = try #require(try await collection.document(id: "file")?.blob(forKey: "data"))
            var streamed = Data()
            var chunks = 0
            for try await chunk in read.contentStream() {
                #expect(chunk.count <= 256 * 1024)
                streamed.append(chunk)
                chunks += 1
            }
            #expect(chunks == 5)
            #expect(streamed == content)
            #expect(try await read.content() == content)
        }
    }

    @Test func missingFileIsRefused() async {
        await expectCouchetteError(.notFound) {
            _ = try Blob(contentType: "text/plain", fileURL: URL(fileURLWithPath: "/nonexistent/file"))
        }
    }

    @Test func equalityIsByDigest() async throws {
        try await withDatabase { database, _ in
            let first = Blob(contentType: "text/plain", data: hello)
            let second = Blob(contentType: "text/html", data: hello)
            #expect(first != second)  // unsaved: only equal to itself
            #expect(first == first)
            try await database.saveBlob(blob: first)
            try await database.saveBlob(blob: second)
            #expect(first == second)
            #expect(first.hashValue == second.hashValue)
            #expect(first != Blob(contentType: "text/plain", data: Data("other".utf8)))
            #expect(Set([first, second]).count == 1)
            #expect(blobFileCount(database) == 1)
            let known = Blob(contentType: "text/plain", data: Data("hello".utf8))
            try await database.saveBlob(blob: known)
            #expect(known.digest == "sha1-qvTGHdzF6KLavt4PO0gs2a6pQ00=")  // SHA-1 of "hello", base64
        }
    }

    @Test func getBlobFindsABlobSavedInAnotherDocument() async throws {
        try await withDatabase { database, _ in
            let collection = try database.defaultCollection()
            let blob = Blob(contentType: "text/plain", data: hello)
            try await collection.save(document: MutableDocument(id: "a").setBlob(blob, forKey: "x"))
            let properties = try #require(try await collection.document(id: "a")?.dictionary(forKey: "x")?.toDictionary())
            let found = try #require(try await database.getBlob(properties: properties))
            #expect(try await found.content() == hello)
            // Its dictionary can be set on another document, which then references the content.
            try await collection.save(document: MutableDocument(id: "b").setValue(properties, forKey: "copy"))
            #expect(try await collection.document(id: "b")?.blob(forKey: "copy") == blob)

            var unknown = properties
            unknown["digest"] = "sha1-AAAAAAAAAAAAAAAAAAAAAAAAAAA="
            #expect(try await database.getBlob(properties: unknown) == nil)
            await expectCouchetteError(.invalidParameter) { _ = try await database.getBlob(properties: ["digest": "x"]) }
        }
    }

    @Test func purgeThenCompactRemovesContent() async throws {
        try await withDatabase { database, _ in
            let collection = try database.defaultCollection()
            let kept = Blob(contentType: "text/plain", data: Data("kept".utf8))
            // Content no other test stores: `content()` looks in every open database of the process,
            // and a test running alongside may hold "hello, blob" when this one checks it is gone.
            let purged = Blob(contentType: "text/plain", data: Data("purged \(UUID())".utf8))
            try await collection.save(document: MutableDocument(id: "keep").setBlob(kept, forKey: "x"))
            try await collection.save(document: MutableDocument(id: "gone").setBlob(purged, forKey: "x"))
            let unreferenced = Blob(contentType: "text/plain", data: Data("never referenced".utf8))
            try await database.saveBlob(blob: unreferenced)
            let read = try #require(try await collection.document(id: "gone")?.blob(forKey: "x"))
            try await collection.purge(id: "gone")
            #expect(try await database.getBlob(properties: purged.properties) != nil)  // not compacted yet

            try await database.performMaintenance(type: .compact)
            #expect(try await database.getBlob(properties: purged.properties) == nil)
            #expect(try await database.getBlob(properties: unreferenced.properties) == nil)
            #expect(try await database.getBlob(properties: kept.properties) != nil)
            await expectCouchetteError(.notFound) { _ = try await read.content() }
            #expect(blobFileCount(database) == 1)
            try await database.performMaintenance(type: .integrityCheck)
        }
    }

    @Test func integrityCheckFindsMissingAndDamagedContent() async throws {
        try await withDatabase { database, _ in
            let collection = try database.defaultCollection()
            // Content no other test uses: blobs read from documents find content in any open database.
            let blob = Blob(contentType: "text/plain", data: Data("hello, damaged".utf8))
            try await collection.save(document: MutableDocument(id: "doc").setBlob(blob, forKey: "x"))
            try await database.performMaintenance(type: .integrityCheck)
            let digest = try #require(blob.digest)
            let path = try #require(database.core.blobs.path(for: digest))

            try Data("HELLO, DAMAGED".utf8).write(to: URL(fileURLWithPath: path))  // same length, other bytes
            let damaged = await expectCouchetteError(.corruption) { try await database.performMaintenance(type: .integrityCheck) }
            #expect(damaged?.contains("does not match its digest") == true)
            #expect(damaged?.contains("'doc'") == true)

            try Data("short".utf8).write(to: URL(fileURLWithPath: path))
            let short = await expectCouchetteError(.corruption) { try await database.performMaintenance(type: .integrityCheck) }
            #expect(short?.contains("5 bytes") == true)

            try FileManager.default.removeItem(atPath: path)
            let missing = await expectCouchetteError(.corruption) { try await database.performMaintenance(type: .integrityCheck) }
            #expect(missing?.contains("missing") == true)
        }
    }

    @Test func blobsInBatchesAndQueries() async throws {
        try await withDatabase { database, _ in
            let collection = try database.defaultCollection()
            let blob = Blob(contentType: "text/plain", data: hello)
            try await database.inBatch { batch in
                try batch.save(document: MutableDocument(id: "batched").setBlob(blob, forKey: "x"), in: collection)
                try batch.save(document: MutableDocument(id: "other").setString("no blob", forKey: "x"), in: collection)
            }
            let query = try database.createQuery("SELECT META().id, x FROM _ WHERE x.digest = $blob.digest")
            query.parameters = Parameters().setBlob(blob, forName: "blob")
            let parameter = try #require(query.parameters?.value(forName: "blob") as? [String: Any])
            #expect(parameter["digest"] as? String == blob.digest && parameter["@type"] as? String == "blob")
            let rows = try await query.execute().allResults()
            #expect(rows.map { $0.string(forKey: "id") } == ["batched"])
            #expect(try await rows.first?.blob(forKey: "x")?.content() == hello)
            #expect(rows.first?.blob(at: 1) == blob)

            query.parameters = Parameters().setBlob(Blob(contentType: "text/plain", data: hello), forName: "blob")
            await expectCouchetteError(.invalidParameter) { _ = try await query.execute() }
        }
    }

    @Test func blobReadFromOneDatabaseIsCopiedIntoAnother() async throws {
        try await withDatabase("source") { source, directory in
            let target = try directory.open("target")
            defer { Task { try? await target.close() } }
            let blob = Blob(contentType: "text/plain", data: hello)
            try await source.defaultCollection().save(document: MutableDocument(id: "a").setBlob(blob, forKey: "x"))
            let read = try #require(try await source.defaultCollection().document(id: "a")?.blob(forKey: "x"))
            try await target.defaultCollection().save(document: MutableDocument(id: "b").setBlob(read, forKey: "y"))
            try await source.delete()
            let copied = try #require(try await target.defaultCollection().document(id: "b")?.blob(forKey: "y"))
            #expect(try await copied.content() == hello)
            try await target.performMaintenance(type: .integrityCheck)
            try await target.close()
        }
    }

    @Test func copiedDatabaseKeepsItsBlobs() async throws {
        try await withDatabase("original") { database, directory in
            try await database.defaultCollection().save(
                document: MutableDocument(id: "doc").setBlob(Blob(contentType: "text/plain", data: hello), forKey: "x"))
            try Database.copy(fromPath: database.path, toDatabase: "copy", withConfig: directory.configuration)
            try await database.delete()
            let copy = try directory.open("copy")
            #expect(try await copy.defaultCollection().document(id: "doc")?.blob(forKey: "x")?.content() == hello)
            try await copy.performMaintenance(type: .integrityCheck)
            try await copy.close()
        }
    }

    @Test func unsavedBlobOutsideADocumentIsReported() throws {
        let blob = Blob(contentType: "text/plain", data: hello)
        #expect(throws: EncodingError.self) { _ = try JSONEncoder().encode([blob]) }
        let document = Document(MutableDocument(id: "x").setBlob(blob, forKey: "b"))
        #expect(document.blob(forKey: "b") == nil)  // a snapshot cannot hold unsaved content
    }
}
