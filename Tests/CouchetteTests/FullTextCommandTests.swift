import Foundation
import Testing

@testable import Couchette

/// Full-text search from the command line: `index … create --fts`, `query` and `watch`.
@Suite struct FullTextCommandTests {
    @Test func createSearchAndExplainAFullTextIndex() async throws {
        let directory = try TemporaryDirectory()
        let db = directory.path + "/sentences"
        #expect(try await CLI.run(["import", db, Fixtures.path("data/sentences.json")]).status == 0)
        let created = try await CLI.run(["index", db, "create", "search", "sentence", "--fts", "--language", "en"])
        #expect(created.status == 0, "\(created.stderr)")
        #expect(created.stdout.contains("Created full-text index search on _default._default (sentence)"))
        #expect(try await CLI.run(["index", db, "create", "other", "sentence", "--language", "en"]).status == 2)
        let badLanguage = try await CLI.run(["index", db, "create", "other", "sentence", "--fts", "--language", "tlh"])
        #expect(badLanguage.status == 1 && badLanguage.stderr.contains("'tlh' has no Snowball stemmer"), "\(badLanguage.stderr)")

        let sql = "SELECT sentence FROM _ WHERE MATCH(search, $q) ORDER BY RANK(search) DESC LIMIT 1"
        let found = try await CLI.run(["query", db, sql, "--param", "q=\"stormy nights\""])
        #expect(found.status == 0, "\(found.stderr)")
        #expect(found.stdout.hasPrefix("{\"sentence\":\"It was a dark and stormy night;"), "\(found.stdout)")
        let explain = try await CLI.run(["query", db, sql, "--param", "q=\"rain\"", "--explain"])
        #expect(
            explain.stdout.contains("FULL-TEXT SCAN _default._default USING search FULLTEXT (sentence) LANGUAGE en"), "\(explain.stdout)")
        let malformed = try await CLI.run(["query", db, sql, "--param", "q=\"(rain\""])
        #expect(malformed.status == 1 && malformed.stderr.contains("malformed full-text search string"), "\(malformed.stderr)")
        let underOr = try await CLI.run(["query", db, "SELECT 1 FROM _ WHERE MATCH(search, 'rain') OR true"])
        #expect(underOr.status == 1 && underOr.stderr.contains("MATCH can only appear at top-level"), "\(underOr.stderr)")
    }

    @Test func watchFollowsAFullTextSearch() async throws {
        try #require(FileManager.default.isExecutableFile(atPath: CrashTests.toolPath))
        try await withDatabase("shared") { database, directory in
            let collection = try database.defaultCollection()
            try await collection.save(document: MutableDocument(id: "a").setString("a striped zebra", forKey: "text"))
            try await collection.createIndex(withName: "text", config: FullTextIndexConfiguration(["text"], language: "en"))

            let outputPath = directory.path + "/watch.out"
            let child = try await WatchCommandTests.startWatch(
                [directory.path + "/shared", "SELECT meta().id AS id FROM _default WHERE MATCH(text, 'zebras') ORDER BY meta().id"],
                outputPath: outputPath)
            defer { if child.isRunning { kill(child.processIdentifier, SIGKILL) } }
            let output = { (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? "" }

            #expect(await eventually { output().contains("1 row") })
            try await collection.save(document: MutableDocument(id: "b").setString("Zebra crossing", forKey: "text"))
            #expect(await eventually { output().contains("2 rows") }, "\(output())")
            kill(child.processIdentifier, SIGINT)
            await waitForExit(child)
            #expect(child.terminationStatus == 0)
            #expect(output().contains("a\nb\n2 rows"), "\(output())")
        }
    }
}
