import Foundation
import Testing

@testable import Couchette

/// Full-text search: FullTextIndexConfiguration, MATCH() and RANK() over Couchbase Lite's
/// `sentences` fixture and small hand-made collections.
@Suite struct FullTextSearchTests {
    /// The sentences fixture as documents s00, s01, … and its texts.
    private static let sentences: [String] = {
        (try? Fixtures.lines("data/sentences.json"))?.compactMap { line in
            guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else { return nil }
            return object["sentence"] as? String
        } ?? []
    }()

    private static func id(_ index: Int) -> String { String(format: "s%02d", index) }

    private func withSentences(
        _ config: FullTextIndexConfiguration = FullTextIndexConfiguration(["sentence"]),
        _ body: (Database, Collection) async throws -> Void
    ) async throws {
        try #require(Self.sentences.count >= 30)
        try await withDatabase { (db, _) async throws in
            let collection = try db.defaultCollection()
            try await db.inBatch { batch in
                for (index, sentence) in Self.sentences.enumerated() {
                    try batch.save(document: MutableDocument(id: Self.id(index)).setString(sentence, forKey: "sentence"), in: collection)
                }
            }
            try await collection.createIndex(withName: "sentence", config: config)
            try await body(db, collection)
        }
    }

    private func ids(_ db: Database, _ search: String, index: String = "sentence", extra: String = "") async throws -> [String] {
        let query = try db.createQuery("SELECT meta().id AS id FROM _ WHERE MATCH(\(index), $q)\(extra) ORDER BY meta().id")
        query.parameters = Parameters().setString(search, forName: "q")
        return try await query.execute().map { $0.string(forKey: "id") ?? "?" }
    }

    /// The sentences containing every word (whole words, case-insensitive): an oracle outside the index.
    private func containing(_ words: [String], without: [String] = []) -> [String] {
        func has(_ sentence: String, _ word: String) -> Bool {
            sentence.range(of: "\\b\(word)\\b", options: [.regularExpression, .caseInsensitive]) != nil
        }
        return Self.sentences.indices.filter { index in
            words.allSatisfy { has(Self.sentences[index], $0) } && !without.contains { has(Self.sentences[index], $0) }
        }.map(Self.id)
    }

    // MARK: - Couchbase Lite's cases

    @Test func singleTermsAndImplicitAnd() async throws {
        try await withSentences { (db, _) async throws in
            let dummie = try await ids(db, "Dummie")
            #expect(dummie == containing(["dummie"]) && dummie.count >= 8, "\(dummie)")
            #expect(try await ids(db, "Dummie woman") == containing(["dummie", "woman"]))
            #expect(try await ids(db, "dummie AND woman") == containing(["dummie", "woman"]))
            #expect(try await ids(db, "DUMMIE") == dummie)  // case-folded
            #expect(try await ids(db, "woman OR rain") == Set(containing(["woman"]) + containing(["rain"])).sorted())
            #expect(try await ids(db, "nonexistentword").isEmpty)
            #expect(try await ids(db, "").isEmpty)
        }
    }

    @Test func stemmingWithALanguage() async throws {
        try await withSentences(FullTextIndexConfiguration(["sentence"], language: "en")) { (db, _) async throws in
            // "received" and "receive" share the stem "receiv"; "dying" stems to "die".
            #expect(try await ids(db, "receive") == containing(["received"]))
            #expect(try await ids(db, "die") == containing(["dying"]))
            // Stop words are neither indexed nor searched: a stop-word-only search finds nothing.
            #expect(try await ids(db, "the").isEmpty)
            #expect(try await ids(db, "the Dummie") == containing(["dummie"]))
        }
        try await withSentences { (db, _) async throws in  // no language: no stemming, no stop words
            #expect(try await ids(db, "receive").isEmpty)
            #expect(try await ids(db, "received") == containing(["received"]))
            #expect(try await ids(db, "the").count == containing(["the"]).count)
        }
    }

    @Test func phrasesPrefixesNotAndNear() async throws {
        try await withSentences { (db, _) async throws in
            #expect(try await ids(db, "\"stormy night\"") == ["s00"])
            #expect(try await ids(db, "\"night stormy\"").isEmpty)
            #expect(try await ids(db, "\"dark and stormy night\"") == ["s00"])
            // A bare hyphenated word is a phrase.
            #expect(try await ids(db, "house-tops") == ["s00"])
            #expect(try await ids(db, "lon*") == containing(["lon\\w*"]))
            #expect(try await ids(db, "\"stormy nig*\"") == ["s00"])
            #expect(try await ids(db, "Dummie NOT woman") == containing(["dummie"], without: ["woman"]))
            #expect(
                try await ids(db, "(rain OR night) NOT dark")
                    == Set(containing(["rain"]) + containing(["night"]))
                    .subtracting(containing(["dark"])).sorted())
            // "dark and stormy night": two words between dark and night.
            #expect(try await ids(db, "dark NEAR/2 night") == ["s00"])
            #expect(try await ids(db, "night NEAR/2 dark") == ["s00"])
            #expect(try await ids(db, "dark NEAR/1 night").isEmpty)
            #expect(try await ids(db, "dark NEAR night") == ["s00"])
        }
    }

    @Test func rankingIsBM25BestFirst() async throws {
        try await withSentences { (db, _) async throws in
            let query = try db.createQuery(
                """
                SELECT meta().id AS id, RANK(sentence) AS score FROM _
                WHERE MATCH(sentence, 'Dummie OR woman') ORDER BY RANK(sentence) DESC, meta().id LIMIT 100
                """)
            let rows = try await query.execute().allResults()
            #expect(rows.count == Set(containing(["dummie"]) + containing(["woman"])).count)
            let scores = rows.map { $0.double(forKey: "score") }
            #expect(scores == scores.sorted(by: >))
            // The oracle: BM25 (k1 1.2, b 0.75) from word counts of the fixture itself.
            let tokenizer = try FullTextTokenizer(ignoreAccents: false, algorithm: nil)
            let documents = Self.sentences.map { tokenizer.terms(ofSearchText: $0).map(\.term) }
            let average = Double(documents.map(\.count).reduce(0, +)) / Double(documents.count)
            func bm25(_ index: Int) -> Double {
                ["dummie", "woman"].reduce(0.0) { total, term in
                    let n = Double(documents.filter { $0.contains(term) }.count)
                    let idf = max(1e-6, log((Double(documents.count) - n + 0.5) / (n + 0.5)))
                    let f = Double(documents[index].filter { $0 == term }.count)
                    guard f > 0 else { return total }
                    return total + idf * f * 2.2 / (f + 1.2 * (0.25 + 0.75 * Double(documents[index].count) / average))
                }
            }
            for row in rows {
                let id = try #require(row.string(forKey: "id"))
                let index = try #require(Int(id.dropFirst()))
                #expect(abs(row.double(forKey: "score") - bm25(index)) < 1e-9, "\(row.toJSON())")
            }
            // The same order when the scan stops early (best first, LIMIT 3).
            let top = try db.createQuery(
                """
                SELECT meta().id AS id FROM _ WHERE MATCH(sentence, 'Dummie OR woman') ORDER BY RANK(sentence) DESC LIMIT 3
                """)
            #expect(try await top.explain().contains("FULL-TEXT SCAN _default._default USING sentence"))
            let best = try await top.execute().map { $0.string(forKey: "id") ?? "" }
            let expected = rows.sorted { a, b in
                a.double(forKey: "score") != b.double(forKey: "score")
                    ? a.double(forKey: "score") > b.double(forKey: "score")
                    : (a.string(forKey: "id") ?? "") < (b.string(forKey: "id") ?? "")
            }.prefix(3).map { $0.string(forKey: "id") ?? "" }
            #expect(best == expected)
        }
    }

    @Test func accentsFoldOnlyWhenAsked() async throws {
        for ignoreAccents in [false, true] {
            try await withDatabase { (db, _) async throws in
                let collection = try db.defaultCollection()
                try await collection.save(document: MutableDocument(id: "a").setString("Un café crème, s’il vous plaît", forKey: "text"))
                try await collection.save(document: MutableDocument(id: "b").setString("Cafe au lait", forKey: "text"))
                try await collection.save(document: MutableDocument(id: "c").setString("CAFÉ NOIR", forKey: "text"))
                try await collection.createIndex(
                    withName: "text", config: FullTextIndexConfiguration(["text"], ignoreAccents: ignoreAccents))
                if ignoreAccents {
                    #expect(try await ids(db, "cafe", index: "text") == ["a", "b", "c"])
                    #expect(try await ids(db, "café", index: "text") == ["a", "b", "c"])
                    #expect(try await ids(db, "creme", index: "text") == ["a"])
                } else {
                    #expect(try await ids(db, "cafe", index: "text") == ["b"])
                    #expect(try await ids(db, "café", index: "text") == ["a", "c"])
                    #expect(try await ids(db, "creme", index: "text").isEmpty)
                }
                #expect(try await ids(db, "s'il", index: "text") == ["a"])  // ’ and ' are one apostrophe
            }
        }
    }

    @Test func multiPropertyIndexAndPartialIndex() async throws {
        try await withDatabase { (db, _) async throws in
            let notes = try await db.createCollection(name: "notes")
            try await notes.save(
                document: MutableDocument(id: "n1").setString("Shopping list", forKey: "title").setString("milk and bread", forKey: "body")
                    .setBoolean(true, forKey: "public"))
            try await notes.save(
                document: MutableDocument(id: "n2").setString("Bread recipe", forKey: "title").setString("flour water salt", forKey: "body")
                    .setBoolean(false, forKey: "public"))
            try await notes.save(
                document: MutableDocument(id: "n3").setString("Ideas", forKey: "title").setInt(42, forKey: "body").setBoolean(
                    true, forKey: "public"))
            try await notes.createIndex(withName: "both", config: FullTextIndexConfiguration(["title", "body"]))
            try await notes.createIndex(
                withName: "publicOnly", config: FullTextIndexConfiguration(["title", "body"], where: "public = true"))
            func search(_ index: String, _ text: String) async throws -> [String] {
                let query = try db.createQuery("SELECT meta().id AS id FROM notes WHERE MATCH(\(index), '\(text)') ORDER BY meta().id")
                return try await query.execute().map { $0.string(forKey: "id") ?? "?" }
            }
            #expect(try await search("both", "bread") == ["n1", "n2"])  // in the body of one, the title of the other
            #expect(try await search("both", "list milk") == ["n1"])  // terms from both fields
            #expect(try await search("both", "\"list milk\"").isEmpty)  // a phrase never spans two fields
            #expect(try await search("both", "ideas") == ["n3"])  // a number body is not text
            #expect(try await search("publicOnly", "bread") == ["n1"])
            try await notes.save(
                document: MutableDocument(id: "n2").setString("Bread recipe", forKey: "title").setBoolean(true, forKey: "public"))
            #expect(try await search("publicOnly", "bread") == ["n1", "n2"])
            #expect(try await search("both", "flour").isEmpty)
        }
    }

    @Test func deleteAndPurgeRemovePostings() async throws {
        try await withSentences { (db, collection) async throws in
            let before = containing(["dummie"])
            try #require(before.count >= 3)
            let deleted = try #require(try await collection.document(id: before[0]))
            try await collection.delete(document: deleted)
            try await collection.purge(id: before[1])
            #expect(try await ids(db, "Dummie") == Array(before.dropFirst(2)))
            // The postings themselves are gone, and the statistics count only what is left.
            let core = collection.core
            let (statistics, postings) = try core.read { txn -> (FullTextStore.Statistics, PostingList) in
                let index = try #require(try core.indexes.indexes(txn, collection.spec, readyOnly: true).first)
                let store = core.indexes.fullTextStore(index.definition)
                return (try store.statistics(txn), try store.postings(txn, term: "dummie"))
            }
            #expect(postings.count == before.count - 2)
            #expect(statistics.documents == UInt64(Self.sentences.count - 2))
            // A change moves the document to a new sequence: its old postings go.
            try await collection.save(document: MutableDocument(id: before[2]).setString("nobody here", forKey: "sentence"))
            #expect(try await ids(db, "Dummie") == Array(before.dropFirst(3)))
            #expect(try await ids(db, "nobody") == [before[2]])
        }
    }

    // MARK: - Queries around MATCH

    @Test func matchWithOtherTermsJoinGroupByAndLimit() async throws {
        try await withSentences { (db, collection) async throws in
            let dummie = containing(["dummie"])
            #expect(try await ids(db, "Dummie", extra: " AND meta().id > 's20'") == dummie.filter { $0 > "s20" })
            let limited = try await queryJSON(
                db, "SELECT meta().id AS id FROM _ WHERE MATCH(sentence, 'Dummie') ORDER BY meta().id LIMIT 2")
            #expect(limited == dummie.prefix(2).map { "{\"id\":\"\($0)\"}" })
            let grouped = try await queryJSON(db, "SELECT COUNT(*) AS n FROM _ WHERE MATCH(sentence, 'Dummie')")
            #expect(grouped == ["{\"n\":\(dummie.count)}"])
            let tags = try await db.createCollection(name: "tags")
            try await tags.save(
                document: MutableDocument(id: "t1").setString(dummie[0], forKey: "sentence").setString("first", forKey: "tag"))
            let joined = try await queryJSON(
                db,
                """
                SELECT meta(s).id AS id, t.tag FROM _ AS s JOIN tags AS t ON t.sentence = meta(s).id
                WHERE MATCH(sentence, 'Dummie') ORDER BY RANK(sentence) DESC
                """)
            #expect(joined == ["{\"id\":\"\(dummie[0])\",\"tag\":\"first\"}"])
            _ = collection
        }
    }

    @Test func errors() async throws {
        try await withSentences { (db, collection) async throws in
            func invalid(_ sql: String, _ fragment: String) {
                #expect {
                    _ = try db.createQuery(sql)
                } throws: { error in
                    guard let error = error as? CouchetteError, error.code == .invalidQuery else { return false }
                    return error.message.contains(fragment)
                }
            }
            invalid("SELECT * FROM _ WHERE MATCH(nope, 'x')", "no index named 'nope'")
            invalid("SELECT * FROM _ WHERE MATCH(sentence, 'x') OR meta().id = 'a'", "MATCH can only appear at top-level")
            invalid("SELECT * FROM _ WHERE NOT MATCH(sentence, 'x')", "MATCH can only appear at top-level")
            invalid("SELECT MATCH(sentence, 'x') FROM _", "MATCH can only appear at top-level")
            invalid("SELECT RANK(sentence) FROM _", "needs MATCH(sentence")
            invalid("SELECT * FROM _ WHERE MATCH(sentence)", "takes an index name and a search string")
            try await collection.createIndex(withName: "plain", config: ValueIndexConfiguration(["sentence"]))
            invalid("SELECT * FROM _ WHERE MATCH(plain, 'x')", "not a full-text index")
            for bad in ["\"unterminated", "dark OR", "(dark", "dark)", "NOT dark", "dark NEAR (night)", "AND", "dark NEAR"] {
                let query = try db.createQuery("SELECT meta().id FROM _ WHERE MATCH(sentence, $q)")
                query.parameters = Parameters().setString(bad, forName: "q")
                await #expect(throws: CouchetteError.self, "\(bad)") { _ = try await query.execute() }
                do { _ = try await query.execute() } catch let error as CouchetteError {
                    #expect(error.code == .invalidQuery && error.message.contains("malformed full-text search string"), "\(bad): \(error)")
                }
            }
            let numeric = try db.createQuery("SELECT meta().id FROM _ WHERE MATCH(sentence, 3)")
            await #expect(throws: CouchetteError.self) { _ = try await numeric.execute() }
            await #expect(throws: CouchetteError.self) {
                try await collection.createIndex(withName: "klingon", config: FullTextIndexConfiguration(["sentence"], language: "tlh"))
            }
            // Dropping the index makes a compiled query fail clearly.
            let query = try db.createQuery("SELECT meta().id FROM _ WHERE MATCH(sentence, 'x')")
            try await collection.deleteIndex(forName: "sentence")
            await #expect(throws: CouchetteError.self) { _ = try await query.execute() }
        }
    }

    @Test func explainReindexReopenAndLiveQueries() async throws {
        let directory = try TemporaryDirectory()
        let expected = containing(["dummie"])
        do {
            let db = try directory.open("fts")
            let collection = try db.defaultCollection()
            for (index, sentence) in Self.sentences.enumerated() {
                try await collection.save(document: MutableDocument(id: Self.id(index)).setString(sentence, forKey: "sentence"))
            }
            try await collection.createIndex(withName: "sentence", config: FullTextIndexConfiguration(["sentence"], language: "en"))
            let explain = try await db.createQuery("SELECT meta().id FROM _ WHERE MATCH(sentence, 'Dummie')").explain()
            #expect(
                explain.hasPrefix("FULL-TEXT SCAN _default._default USING sentence FULLTEXT (sentence) LANGUAGE en MATCH \"Dummie\""),
                "\(explain)")
            try await db.performMaintenance(type: .reindex)
            #expect(try await ids(db, "Dummie") == expected)

            // A live query follows commits, replicated-style writes included.
            let live = try db.createQuery("SELECT meta().id AS id FROM _ WHERE MATCH(sentence, 'zebra') ORDER BY RANK(sentence) DESC")
            let changes = live.changes()
            #expect(try #require(await changes.next()).results?.allResults().isEmpty == true)
            try await collection.save(document: MutableDocument(id: "z").setString("A zebra!", forKey: "sentence"))
            let next = try #require(await changes.next())
            #expect(next.results?.allResults().map { $0.string(forKey: "id") } == ["z"])
            try await db.close()
        }
        let reopened = try directory.open("fts")
        #expect(try await ids(reopened, "Dummie") == expected)
        #expect(try await ids(reopened, "zebra") == ["z"])
        try await reopened.close()
    }

    // MARK: - Tokenizer

    @Test func tokenizerWordBoundaries() throws {
        let tokenizer = try FullTextTokenizer(ignoreAccents: false, algorithm: nil)
        func terms(_ text: String) -> [String] { tokenizer.terms(ofSearchText: text).map(\.term) }
        #expect(terms("Hello, World! don't e.g. 3.14 1,000 foo_bar") == ["hello", "world", "don't", "e.g", "3.14", "1,000", "foo_bar"])
        #expect(terms("Ünïcödé ÉCOLE") == ["ünïcödé", "école"])
        #expect(terms("東京タワー") == ["東", "京", "タワー"])
        #expect(terms("'quoted' -dash- ...") == ["quoted", "dash"])
        let offsets = tokenizer.terms(ofSearchText: "a b  c").map(\.offset)
        #expect(offsets == [0, 1, 2])
        // ASCII text takes a byte-level path; a non-ASCII word sends the same text down the scalar path.
        let english = try FullTextTokenizer(ignoreAccents: true, algorithm: "en")
        let ascii = "The Running dogs' e.g. x'y .a. a.b.c 1.a 3,14; don't STOP__it _x_ " + String(repeating: "z", count: 250)
        for tokenizer in [tokenizer, english] {
            let byBytes = tokenizer.terms(ofSearchText: ascii)
            let byScalars = tokenizer.terms(ofSearchText: ascii + " é")
            #expect(byBytes.map(\.term) + ["e"] == byScalars.map(\.term) || byBytes.map(\.term) + ["é"] == byScalars.map(\.term))
            #expect(byBytes.map(\.offset) == byScalars.dropLast().map(\.offset))
        }
    }
}
