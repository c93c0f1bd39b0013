import Foundation
import Testing

/// End-to-end tests of the `couchette` executable: each runs the built tool as a child process
/// against databases in a temporary folder and checks its output and exit status.
@Suite struct CLITests {
    // MARK: - import, query, export

    static let names = Fixtures.path("data/names_100.json")

    @Test func importThenQueryAsJSONGivesExactRows() async throws {
        let directory = try TemporaryDirectory()
        let db = directory.path + "/people"
        let imported = try await CLI.run(["import", db, Self.names])
        #expect(imported.status == 0, "\(imported.stderr)")
        #expect(imported.stdout.hasPrefix("Imported 100 documents into _default._default"))

        let sql =
            "SELECT name.first, name.last, birthday, likes FROM _default "
            + "WHERE contact.address.state = $state ORDER BY birthday LIMIT $n"
        let query = try await CLI.run([
            "query", db + ".couchette", sql, "--param", "state=\"CA\"", "--param", "n=3",
            "--format", "json",
        ])
        #expect(query.status == 0, "\(query.stderr)")
        #expect(
            query.stdout == """
                [{"first":"Cleveland","last":"Bejcek","birthday":"1944-07-30","likes":["chess","checkers"]},\
                {"first":"Dorthea","last":"Visnic","birthday":"1948-11-06","likes":[]},\
                {"first":"Rico","last":"Hoopengardner","birthday":"1961-12-22","likes":["biking"]}]

                """)

        let lines = try await CLI.run(["query", db, sql, "--param", "state=\"CA\"", "--param", "n=2", "--format", "jsonl"])
        #expect(
            lines.stdout == """
                {"first":"Cleveland","last":"Bejcek","birthday":"1944-07-30","likes":["chess","checkers"]}
                {"first":"Dorthea","last":"Visnic","birthday":"1948-11-06","likes":[]}

                """)

        let table = try await CLI.run([
            "query", db, "SELECT name.first, birthday FROM _default WHERE name.last = $last",
            "--param", "last=\"Bejcek\"", "--format", "table",
        ])
        let tableLines = table.stdout.split(separator: "\n").map(String.init)
        #expect(tableLines.count == 4, "\(table.stdout)")
        #expect(tableLines.first == "first     | birthday")
        #expect(tableLines.dropFirst(2).first == "Cleveland | 1944-07-30")
        #expect(tableLines.last?.hasPrefix("1 row (") == true)

        let count = try await CLI.run(["query", db, "SELECT COUNT(*) AS n FROM _default"])  // a pipe: jsonl
        #expect(count.stdout == "{\"n\":100}\n")

        let explain = try await CLI.run(["query", db, "SELECT name FROM _default", "--explain"])
        #expect(explain.status == 0)
        #expect(explain.stdout.contains("SCAN _default._default"))
    }

    @Test func importsAJSONArrayWithIDKeyAndDropsRev() async throws {
        let directory = try TemporaryDirectory()
        let file = directory.path + "/array.json"
        try """
        [
          {"key": "x", "v": [1, 2, {"a": "]"}]},
          {"key": 7, "v": 1.5, "_rev": "9-abc"},
          {"_id": "given", "key": "ignored", "v": null}
        ]
        """.write(toFile: file, atomically: true, encoding: .utf8)
        let db = directory.path + "/array"
        let result = try await CLI.run(["import", db, file, "--id-key", "key", "--collection", "s.things"])
        #expect(result.status == 0, "\(result.stderr)")
        let exported = try await CLI.run(["export", db, "--collection", "s.things"])
        let documents = try exported.jsonLines()
        #expect(documents.map { $0["_id"] as? String } == ["7", "given", "x"])
        #expect(documents[0]["key"] == nil && documents[0]["v"] as? Double == 1.5)
        #expect((documents[0]["_rev"] as? String)?.hasPrefix("1-") == true)
        #expect(documents[1]["key"] as? String == "ignored")
        #expect(documents[1]["v"] is NSNull)
        #expect(documents[2]["key"] == nil)
    }

    @Test func importTakesEscapedIdsAndRefusesIdsOfOtherTypes() async throws {
        let directory = try TemporaryDirectory()
        let file = directory.path + "/ids.jsonl"
        try [#"{"\u005fid":"escaped","_rev":"1-x","v":1}"#, #"{"_id":12,"v":2}"#, #"{"v":3,"_id":"plain"}"#]
            .joined(separator: "\n").write(toFile: file, atomically: true, encoding: .utf8)
        let db = directory.path + "/ids"
        let result = try await CLI.run(["import", db, file])
        #expect(result.status == 0, "\(result.stderr)")
        let exported = try await CLI.run(["export", db]).jsonLines()
        #expect(exported.map { $0["_id"] as? String } == ["12", "escaped", "plain"])
        #expect(exported.map { $0["v"] as? Int } == [2, 1, 3])

        try #"{"_id":["no"],"v":1}"#.write(toFile: file, atomically: true, encoding: .utf8)
        let refused = try await CLI.run(["import", db, file])
        #expect(refused.status == 1)
        #expect(refused.stderr.contains("line 1") && refused.stderr.contains("'_id' must be a non-empty string or an integer"))
    }

    @Test func malformedLineIsReportedAndNothingOfItsBatchIsWritten() async throws {
        let directory = try TemporaryDirectory()
        let file = directory.path + "/bad.jsonl"
        try ["{\"_id\":\"a\"}", "{\"_id\":\"b\"}", "", "{\"_id\":\"c\"}", "{\"_id\":\"d\",oops}", "{\"_id\":\"e\"}"]
            .joined(separator: "\n").write(toFile: file, atomically: true, encoding: .utf8)
        let db = directory.path + "/bad"

        let whole = try await CLI.run(["import", db, file])
        #expect(whole.status == 1)
        #expect(whole.stderr.hasPrefix("couchette import: "))
        #expect(whole.stderr.contains("line 5"), "\(whole.stderr)")
        #expect(try await CLI.run(["query", db, "SELECT COUNT(*) AS n FROM _default"]).stdout == "{\"n\":0}\n")

        // Batches of two: a and b commit; c and the bad line share a batch, so c is not written.
        let batched = try await CLI.run(["import", db, file, "--batch-size", "2"])
        #expect(batched.status == 1)
        #expect(batched.stderr.contains("line 5") && batched.stderr.contains("2 documents imported before"))
        let ids = try await CLI.run(["query", db, "SELECT META().id FROM _default ORDER BY META().id"]).stdout
        #expect(ids == "{\"id\":\"a\"}\n{\"id\":\"b\"}\n")

        try "[{\"a\":1},\n{\"a\":2}".write(toFile: file, atomically: true, encoding: .utf8)
        let unclosed = try await CLI.run(["import", db, file])
        #expect(unclosed.status == 1 && unclosed.stderr.contains("not closed"))

        let missing = try await CLI.run(["import", db, directory.path + "/nope.json"])
        #expect(missing.status == 1 && missing.stderr.contains("cannot read"))
    }

    /// Import commits a batch while it reads the next (`Database.inBatches`): the count in the
    /// message is of the batches committed, all of them before the bad line's.
    @Test func aMalformedLineAfterSeveralBatchesReportsEveryBatchBeforeIt() async throws {
        let directory = try TemporaryDirectory()
        let file = directory.path + "/late.jsonl"
        let lines = (1...7).map { "{\"_id\":\"d\($0)\"}" } + ["{\"_id\":\"bad\",oops}", "{\"_id\":\"d9\"}"]
        try lines.joined(separator: "\n").write(toFile: file, atomically: true, encoding: .utf8)
        let db = directory.path + "/late"
        let result = try await CLI.run(["import", db, file, "--batch-size", "2"])
        #expect(result.status == 1)
        #expect(result.stderr.contains("line 8") && result.stderr.contains("nothing from line 7 on was written"), "\(result.stderr)")
        #expect(result.stderr.contains("(6 documents imported before it)"), "\(result.stderr)")
        #expect(try await CLI.run(["query", db, "SELECT COUNT(*) AS n FROM _default"]).stdout == "{\"n\":6}\n")
    }

    @Test func importsFromStandardInputAndAcceptsOptionEqualsValue() async throws {
        let directory = try TemporaryDirectory()
        let db = directory.path + "/stdin"
        let result = try await CLI.run(["import", db, "-", "--id-key=id"], input: "{\"id\":1,\"a\":\"x\"}\n\n{\"id\":2}\n")
        #expect(result.status == 0, "\(result.stderr)")
        let query = try await CLI.run([
            "query", db, "SELECT META().id, a FROM _default WHERE META().id = $id",
            "--param=$id=\"1\"", "--format=json",
        ])
        #expect(query.stdout == "[{\"id\":\"1\",\"a\":\"x\"}]\n")
        let empty = try await CLI.run(["query", db, "SELECT a FROM _default WHERE a = 'none'", "--format", "json"])
        #expect(empty.stdout == "[]\n")
    }

    @Test func exportThenImportReproducesDocumentsAndRevisions() async throws {
        let directory = try TemporaryDirectory()
        let source = directory.path + "/source"
        #expect(try await CLI.run(["import", source, Self.names, "--collection", "people"]).status == 0)
        #expect(
            try await CLI.run([
                "put", source, "extra", "{\"emoji\":\"😀\",\"path\":\"a/b\",\"q\":\"\\\"\"}",
                "--collection", "people",
            ]).status == 0)
        let exportFile = directory.path + "/people.jsonl"
        let exported = try await CLI.run(["export", source, "--collection", "people", "--output", exportFile])
        #expect(exported.status == 0, "\(exported.stderr)")
        let first = try String(contentsOfFile: exportFile, encoding: .utf8)
        #expect(first.split(separator: "\n").count == 101)

        let copy = directory.path + "/copy.couchette"
        #expect(try await CLI.run(["import", copy, exportFile]).status == 0)
        let again = try await CLI.run(["export", copy])
        #expect(again.stdout == first)
        #expect(
            try await CLI.run(["get", copy, "extra"]).stdout
                == (first.split(separator: "\n").first { $0.contains("\"_id\":\"extra\"") }.map { $0 + "\n" }))
    }

    // MARK: - documents

    @Test func putGetRemovePurge() async throws {
        let directory = try TemporaryDirectory()
        let db = directory.path + "/docs"
        let put = try await CLI.run(["put", db, "a", "{\"title\":\"Buy milk\",\"n\":1}"])
        #expect(put.status == 0, "\(put.stderr)")
        let revision = put.stdout.trimmingCharacters(in: .newlines)
        #expect(revision.hasPrefix("1-"))
        let got = try await CLI.run(["get", db, "a"])
        #expect(got.stdout == "{\"_id\":\"a\",\"_rev\":\"\(revision)\",\"n\":1,\"title\":\"Buy milk\"}\n")

        // A stale _rev is refused; the current one is accepted.
        let stale = try await CLI.run(["put", db, "a", "{\"_rev\":\"1-0000\",\"n\":2}"])
        #expect(stale.status == 1 && stale.stderr.contains("conflict"))
        let update = try await CLI.run(["put", db, "a", "{\"_rev\":\"\(revision)\",\"n\":2}"])
        #expect(update.status == 0 && update.stdout.hasPrefix("2-"))
        #expect(try await CLI.run(["get", db, "a"]).stdout.hasSuffix(",\"n\":2}\n"))

        let badJSON = try await CLI.run(["put", db, "b", "{nope"])
        #expect(badJSON.status == 1 && badJSON.stderr.hasPrefix("couchette put: "))

        #expect(try await CLI.run(["rm", db, "a"]).status == 0)
        let gone = try await CLI.run(["get", db, "a"])
        #expect(gone.status == 1 && gone.stderr == "couchette get: no document 'a' in _default._default\n")
        #expect(try await CLI.run(["rm", db, "a"]).status == 1)
        // The tombstone is still there until purged; a second purge finds nothing.
        #expect(try await CLI.run(["purge", db, "a"]).status == 0)
        #expect(try await CLI.run(["purge", db, "a"]).status == 1)

        #expect(try await CLI.run(["put", db, "c", "{}", "--collection", "inbox.mail"]).status == 0)
        #expect(try await CLI.run(["get", db, "c", "--collection", "inbox.mail"]).stdout.hasPrefix("{\"_id\":\"c\",\"_rev\":\"1-"))
        let wrongCollection = try await CLI.run(["get", db, "c", "--collection", "inbox.nothing"])
        #expect(wrongCollection.status == 1 && wrongCollection.stderr.contains("no collection inbox.nothing"))
    }

    @Test func infoCheckAndCompact() async throws {
        let directory = try TemporaryDirectory()
        let db = directory.path + "/info"
        #expect(try await CLI.run(["put", db, "a", "{}"]).status == 0)
        #expect(try await CLI.run(["put", db, "b", "{}", "--collection", "s.c"]).status == 0)
        let info = try await CLI.run(["info", db])
        #expect(info.status == 0)
        #expect(info.stdout.contains("Path:        \(directory.path)/info.couchette/"))
        #expect(info.stdout.contains("_default._default  1 document\n"))
        #expect(info.stdout.contains("s.c                1 document\n"))
        #expect(info.stdout.contains("Indexes:     none"))
        #expect(try await CLI.run(["check", db]).stdout == "ok\n")
        #expect(try await CLI.run(["compact", db]).status == 0)
        #expect(try await CLI.run(["get", db, "a"]).status == 0)
    }

    // MARK: - shell

    @Test func shellDrivenThroughAPipe() async throws {
        let directory = try TemporaryDirectory()
        let db = directory.path + "/shell"
        #expect(try await CLI.run(["put", db, "a", "{\"n\":1}", "--collection", "items"]).status == 0)
        #expect(try await CLI.run(["put", db, "b", "{\"n\":2}", "--collection", "items"]).status == 0)
        let input = """
            .collections
            .mode json
            SELECT META().id, n FROM items
              ORDER BY n DESC;
            .mode jsonl
            SELECT n FROM items WHERE n = 1; SELECT COUNT(*) AS c FROM items;
            .use items
            .get b
            .bogus
            .quit
            SELECT 'never';
            """
        let result = try await CLI.run(["shell", db], input: input)
        let revisionOfB = try await revision(of: "b", in: db, collection: "items")
        #expect(
            result.stdout == """
                _default._default  0
                _default.items  2
                [{"id":"b","n":2},{"id":"a","n":1}]
                {"n":1}
                {"c":2}
                {"_id":"b","_rev":"\(revisionOfB)","n":2}

                """)
        #expect(result.stderr == "Error: unknown command .bogus (.help lists them)\n")
        #expect(result.status == 1)

        let clean = try await CLI.run(["shell", db], input: "SELECT COUNT(*) AS c FROM items\n")  // no ';' at the end
        #expect(clean.status == 0)
        #expect(clean.stdout.hasPrefix("c\n-\n2\n1 row ("))
        let bad = try await CLI.run(["shell", db], input: "SELEC 1;\n.help\n")
        #expect(bad.status == 1 && bad.stderr.hasPrefix("Error: invalid query"))
        #expect(bad.stdout.contains(".explain SQL++"))
    }

    private func revision(of id: String, in db: String, collection: String) async throws -> String {
        let document = try await CLI.run(["get", db, id, "--collection", collection]).jsonLines()
        return document.first?["_rev"] as? String ?? ""
    }

    // MARK: - usage

    @Test(arguments: [
        "demo", "info", "import", "export", "get", "put", "rm", "purge", "query", "watch", "shell",
        "compact", "check", "serve", "replicate",
    ])
    func everyCommandHasHelp(_ command: String) async throws {
        let result = try await CLI.run([command, "--help"])
        #expect(result.status == 0)
        #expect(result.stdout.contains("Usage: couchette \(command)"))
        #expect(result.stdout.contains("--help"))
        let overview = try await CLI.run(["--help"])
        #expect(overview.stdout.contains("\n  \(command) "))
    }

    @Test func usageErrorsExitWithTwo() async throws {
        let directory = try TemporaryDirectory()
        let db = directory.path + "/usage"
        let unknown = try await CLI.run(["frobnicate"])
        #expect(unknown.status == 2 && unknown.stderr.hasPrefix("couchette: unknown command 'frobnicate'"))

        let missing = try await CLI.run(["get", db])
        #expect(missing.status == 2)
        #expect(missing.stderr == "couchette get: missing argument ID (expected DB ID)\nUsage: couchette get DB ID [--collection C]\n")

        let option = try await CLI.run(["query", db, "SELECT 1", "--colour"])
        #expect(option.status == 2 && option.stderr.hasPrefix("couchette query: unknown option --colour\n"))
        #expect(try await CLI.run(["query", db, "SELECT 1", "--format", "xml"]).status == 2)
        #expect(try await CLI.run(["query", db, "SELECT 1", "--param", "x=not json"]).status == 2)
        #expect(try await CLI.run(["export", db, "extra"]).status == 2)
        #expect(try await CLI.run(["import", db, "f", "--batch-size", "0"]).status == 2)
        #expect(try await CLI.run(["put", db, "a", "{}", "--collection", "a.b.c"]).status == 2)
        #expect(try await CLI.run(["info", ""]).status == 2)
        #expect(try await CLI.run(["put", db, "a", "{}", "--collection", "c", "--collection", "d"]).status == 2)
    }

    @Test func indexCreateListExplainAndDrop() async throws {
        let directory = try TemporaryDirectory()
        let db = directory.path + "/people"
        #expect(try await CLI.run(["import", db, Self.names]).status == 0)
        let created = try await CLI.run(["index", db, "create", "byState", "contact.address.state, LOWER(name.last)"])
        #expect(created.status == 0, "\(created.stderr)")
        #expect(created.stdout.contains("Created index byState on _default._default"))
        let partial = try await CLI.run(["index", db, "create", "caByBirthday", "birthday", "--where", "contact.address.state = 'CA'"])
        #expect(partial.status == 0, "\(partial.stderr)")
        #expect(try await CLI.run(["index", db, "list"]).stdout == "_default._default: byState\n_default._default: caByBirthday\n")
        #expect(try await CLI.run(["info", db]).stdout.contains("_default._default: byState"))

        let sql = "SELECT name.last FROM _default WHERE contact.address.state = 'CA' AND LOWER(name.last) = 'bejcek'"
        let explain = try await CLI.run(["query", db, sql, "--explain"])
        #expect(explain.stdout.contains("USING byState"), "\(explain.stdout)")
        // --explain plans with the parameters set (unset, `$s` is MISSING and nothing would match).
        let parameterized = try await CLI.run([
            "query", db, "SELECT name.last FROM _default WHERE contact.address.state = $s AND LOWER(name.last) = 'bejcek'",
            "--param", "s=\"CA\"", "--explain",
        ])
        #expect(parameterized.stdout.contains("USING byState"), "\(parameterized.stdout)")
        #expect(try await CLI.run(["query", db, sql]).stdout == "{\"last\":\"Bejcek\"}\n")
        let ordered = try await CLI.run([
            "query", db, "SELECT birthday FROM _default WHERE contact.address.state = 'CA' AND birthday > '1950' ORDER BY birthday LIMIT 1",
            "--explain",
        ])
        #expect(ordered.stdout.contains("USING caByBirthday"), "\(ordered.stdout)")

        #expect(try await CLI.run(["index", db, "drop", "byState"]).status == 0)
        #expect(try await CLI.run(["index", db, "drop", "byState"]).status == 0)  // missing: no-op
        #expect(try await CLI.run(["index", db, "list", "--collection", "_default"]).stdout == "_default._default: caByBirthday\n")
        #expect(try await CLI.run(["query", db, sql, "--explain"]).stdout.contains("SCAN _default._default"))

        let bad = try await CLI.run(["index", db, "create", "bad", "name.last +"])
        #expect(bad.status == 1)
        #expect(bad.stderr.contains("invalid query") && bad.stderr.contains("index 'bad'"), "\(bad.stderr)")
        #expect(try await CLI.run(["index", db, "rebuild"]).status == 2)
        #expect(try await CLI.run(["index", db, "create", "onlyName"]).status == 2)
        #expect(try await CLI.run(["index", db, "list", "--collection", "nope"]).status == 1)
    }

    @Test func runtimeErrorsExitWithOne() async throws {
        let directory = try TemporaryDirectory()
        let db = directory.path + "/runtime"
        let absent = try await CLI.run(["info", db])
        #expect(absent.status == 1 && absent.stderr == "couchette info: no database at \(db).couchette\n")
        #expect(!FileManager.default.fileExists(atPath: db + ".couchette"), "a reading command created the database")
        #expect(try await CLI.run(["put", db, "a", "{}"]).status == 0)
        let badSQL = try await CLI.run(["query", db, "SELEC x FROM _default"])
        #expect(badSQL.status == 1 && badSQL.stderr.hasPrefix("couchette query: invalid query: "))
        let unknownCollection = try await CLI.run(["query", db, "SELECT * FROM nowhere"])
        #expect(unknownCollection.status == 1)
        let unsetParameter = try await CLI.run(["query", db, "SELECT * FROM _default WHERE n = $n"])
        #expect(unsetParameter.status == 1 && unsetParameter.stderr.hasPrefix("couchette query: "))
    }
}

/// Runs the built `couchette` next to the test binary.
enum CLI {
    struct Result {
        let status: Int32
        let stdout: String
        let stderr: String

        /// Standard output as JSON objects, one per line.
        func jsonLines() throws -> [[String: Any]] {
            try stdout.split(separator: "\n").map { line in
                try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            }
        }
    }

    static func run(_ arguments: [String], input: String = "") async throws -> Result {
        let tool = CrashTests.toolPath
        try #require(FileManager.default.isExecutableFile(atPath: tool), "build the couchette tool first: \(tool)")
        let scratch = try TemporaryDirectory()
        let inputPath = scratch.path + "/stdin", outputPath = scratch.path + "/stdout", errorPath = scratch.path + "/stderr"
        for path in [outputPath, errorPath] { _ = FileManager.default.createFile(atPath: path, contents: nil) }
        try input.write(toFile: inputPath, atomically: true, encoding: .utf8)
        let child = Process()
        child.executableURL = URL(fileURLWithPath: tool)
        child.arguments = arguments
        var environment = ProcessInfo.processInfo.environment
        environment["NO_COLOR"] = "1"
        child.environment = environment
        child.standardInput = try FileHandle(forReadingFrom: URL(fileURLWithPath: inputPath))
        child.standardOutput = try FileHandle(forWritingTo: URL(fileURLWithPath: outputPath))
        child.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: errorPath))
        try await startProcess(child)
        await waitForExit(child)
        return Result(
            status: child.terminationStatus,
            stdout: try String(contentsOfFile: outputPath, encoding: .utf8),
            stderr: try String(contentsOfFile: errorPath, encoding: .utf8))
    }
}
