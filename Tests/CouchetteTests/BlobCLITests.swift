import Foundation
import Testing

/// `couchette attach`, `blob`, `get` of blob dictionaries, `export --with-blobs` and `import`,
/// `check` and `compact` with blobs: the built tool against real databases.
@Suite struct BlobCLITests {
    @Test func attachGetBlobExportImportCheckCompact() async throws {
        let directory = try TemporaryDirectory()
        let db = directory.path + "/files"
        let input = directory.path + "/photo.bin"
        let content = Data((0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ 3) })
        try content.write(to: URL(fileURLWithPath: input))

        #expect(try await CLI.run(["put", db, "doc", "{\"title\":\"cat\"}"]).status == 0)
        let attached = try await CLI.run(["attach", db, "doc", "photo", input, "--type", "image/png"])
        #expect(attached.status == 0, "\(attached.stderr)")
        #expect(attached.stdout.hasPrefix("2-"))

        // get shows the blob dictionary beside the other properties.
        let got = try #require(try await CLI.run(["get", db, "doc"]).jsonLines().first)
        #expect(got["title"] as? String == "cat")
        let photo = try #require(got["photo"] as? [String: Any])
        #expect(photo["@type"] as? String == "blob")
        #expect(photo["content_type"] as? String == "image/png")
        #expect(photo["length"] as? Int == content.count)
        #expect((photo["digest"] as? String)?.hasPrefix("sha1-") == true)

        // blob writes the content, to a file or to standard output.
        let output = directory.path + "/out.bin"
        let written = try await CLI.run(["blob", db, "doc", "photo", "--output", output])
        #expect(written.status == 0, "\(written.stderr)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: output)) == content)
        #expect(try await CLI.run(["put", db, "text", "{}"]).status == 0)
        try Data("small text".utf8).write(to: URL(fileURLWithPath: input))
        #expect(try await CLI.run(["attach", db, "text", "note", input]).status == 0)
        #expect(try await CLI.run(["blob", db, "text", "note"]).stdout == "small text")
        let notABlob = try await CLI.run(["blob", db, "doc", "title"])
        #expect(notABlob.status == 1 && notABlob.stderr.contains("not a blob"))

        // export --with-blobs inlines contents; import reads them back into another database.
        let exportFile = directory.path + "/export.jsonl"
        #expect(try await CLI.run(["export", db, "--with-blobs", "--output", exportFile]).status == 0)
        let exported = try String(contentsOfFile: exportFile, encoding: .utf8)
        #expect(exported.contains("\"data\":\"c21hbGwgdGV4dA==\""))  // base64 of "small text"
        let plain = try await CLI.run(["export", db])
        #expect(!plain.stdout.contains("\"data\""))
        let copy = directory.path + "/copy"
        let imported = try await CLI.run(["import", copy, exportFile])
        #expect(imported.status == 0, "\(imported.stderr)")
        let copied = directory.path + "/copied.bin"
        #expect(try await CLI.run(["blob", copy, "doc", "photo", "--output", copied]).status == 0)
        #expect(try Data(contentsOf: URL(fileURLWithPath: copied)) == content)
        // The same bodies (blob dictionaries included: same digests), under new revisions (and
        // so with the `revpos` of their new first revision).
        let withoutRevisions: ([[String: Any]]) -> [NSDictionary] = { rows in
            rows.map { row in
                var body = row
                body["_rev"] = nil
                for (key, value) in body {
                    if var blob = value as? [String: Any], blob["@type"] as? String == "blob" {
                        blob["revpos"] = nil
                        body[key] = blob
                    }
                }
                return body as NSDictionary
            }
        }
        #expect(withoutRevisions(try await CLI.run(["export", copy]).jsonLines()) == withoutRevisions(try plain.jsonLines()))
        #expect(try await CLI.run(["check", copy]).stdout == "ok\n")

        // compact deletes content once no revision references it; check notices a missing file.
        #expect(try await CLI.run(["purge", db, "doc"]).status == 0)
        #expect(try await CLI.run(["compact", db]).status == 0)
        let blobs = try FileManager.default.contentsOfDirectory(atPath: db + ".couchette/blobs")
        #expect(blobs.count == 1)
        try FileManager.default.removeItem(atPath: db + ".couchette/blobs/" + blobs[0])
        let check = try await CLI.run(["check", db])
        #expect(check.status == 1 && check.stderr.contains("missing"))
    }
}
