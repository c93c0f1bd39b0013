import Foundation
import Testing

@testable import Couchette

/// Index definitions (create/replace/delete/list, persistence, bad expressions), index
/// maintenance under every kind of write, and the planner's use of indexes as explain() shows it.
@Suite(.tags(.sanitizeAddress, .sanitizeAddress)) struct IndexTests {
    /// People with a name, an age (ints, doubles, some missing or null), a city and tags.
    private func withPeople(_ body: (Database, Collection) async throws -> Void) async throws {
        try await withDatabase { db, _ in
            let people = try await db.createCollection(name: "people")
            let cities = ["Austin", "Boston", "Chicago", "Denver"]
            try await db.inBatch { batch in
                for i in 0..<40 {
                    let doc = MutableDocument(id: String(format: "p%02d", i))
                        .setString("name\(i % 10)", forKey: "name")
                        .setString(cities[i % 4], forKey: "city")
                        .setValue(["t\(i % 3)", "t\(i % 5)"], forKey: "tags")
                        .setValue([["type": i % 2 == 0 ? "home" : "work", "n": i]], forKey: "phones")
                    if i % 7 == 3 {
                        doc.setValue(NSNull(), forKey: "age")
                    } else if i % 7 != 5 {
                        if i % 2 == 0 { doc.setInt(20 + i, forKey: "age") } else { doc.setDouble(Double(20 + i) + 0.5, forKey: "age") }
                    }
                    try batch.save(document: doc, in: people)
                }
            }
            try await body(db, people)
        }
    }

    private func explain(_ db: Database, _ sql: String, _ parameters: Parameters? = nil) async throws -> String {
        let query = try db.createQuery(sql)
        query.parameters = parameters
        return try await query.explain()
    }

    private func ids(_ db: Database, _ sql: String, _ parameters: Parameters? = nil) async throws -> [String] {
        let query = try db.createQuery(sql)
        query.parameters = parameters
        return try await query.execute().map { $0.string(forKey: "id") ?? "?" }
    }

    /// Runs the query with its index and again after dropping it: both must agree.
    private func expectSameWithoutIndex(
        _ db: Database, _ collection: Collection, _ index: String,
        _ sql: String, sourceLocation: SourceLocation = #_sourceLocation
    ) async throws -> [String] {
        let with = try await queryJSON(db, sql)
        let plan = try await explain(db, sql)
        #expect(plan.contains("USING \(index)") || plan.contains("UNION OF \(index)"), "\(plan)", sourceLocation: sourceLocation)
        let config = try #require(try await Self.configuration(collection, index))
        try await collection.deleteIndex(forName: index)
        let without = try await queryJSON(db, sql)
        #expect(with == without, "\(sql)", sourceLocation: sourceLocation)
        try await collection.createIndex(withName: index, config: config)
        return with
    }

    private static func configuration(_ collection: Collection, _ name: String) async throws -> (any IndexConfiguration)? {
        let stored = try collection.reader.read { try $0.indexDefinitions(collection.spec) }.first { $0.name == name }
        guard let definition = stored?.definition else { return nil }
        switch definition.kind {
        case .value: return ValueIndexConfiguration(definition.expressions, where: definition.whereClause)
        case .array:
            return ArrayIndexConfiguration(
                path: definition.path ?? "", expressions: definition.expressions.isEmpty ? nil : definition.expressions)
        case .fullText:
            return FullTextIndexConfiguration(
                definition.expressions, where: definition.whereClause,
                ignoreAccents: definition.ignoreAccents ?? false, language: definition.language)
        }
    }

    // MARK: - Definitions

    @Test func createListReplaceDeleteAndReopen() async throws {
        let directory = try TemporaryDirectory()
        do {
            let db = try directory.open()
            let people = try await db.createCollection(name: "people")
            try await people.createIndex(withName: "byName", config: ValueIndexConfiguration(["name"]))
            try await people.createIndex(withName: "byName", config: ValueIndexConfiguration(["name"]))  // same: no-op
            try await people.createIndex(withName: "byAge", config: ValueIndexConfiguration(["age"], where: "age > 10"))
            try await people.createIndex(withName: "byTag", config: ArrayIndexConfiguration(path: "tags"))
            #expect(try await people.indexes() == ["byAge", "byName", "byTag"])
            #expect(try await db.defaultCollection().indexes() == [])
            try await people.deleteIndex(forName: "missing")  // no-op
            try await people.deleteIndex(forName: "byTag")
            #expect(try await people.indexes() == ["byAge", "byName"])
            try await db.close()
        }
        let db = try directory.open()
        let people = try #require(try db.collection(name: "people"))
        #expect(try await people.indexes() == ["byAge", "byName"])
        try await people.save(document: MutableDocument(id: "a").setString("Ann", forKey: "name"))
        #expect(try await explain(db, "SELECT META().id AS id FROM people WHERE name = 'Ann'").contains("USING byName"))
        #expect(try await ids(db, "SELECT META().id AS id FROM people WHERE name = 'Ann'") == ["a"])
        // A different configuration replaces the index (and rebuilds it).
        try await people.createIndex(withName: "byName", config: ValueIndexConfiguration(["LOWER(name)"]))
        #expect(try await explain(db, "SELECT META().id AS id FROM people WHERE name = 'Ann'").hasPrefix("SCAN"))
        #expect(try await explain(db, "SELECT META().id AS id FROM people WHERE LOWER(name) = 'ann'").contains("USING byName"))
        #expect(try await ids(db, "SELECT META().id AS id FROM people WHERE LOWER(name) = 'ann'") == ["a"])
        try await db.close()
    }

    @Test func badExpressionsAreInvalidQueries() async throws {
        try await withDatabase { db, _ in
            let people = try await db.createCollection(name: "people")
            let parse = await expectCouchetteError(.invalidQuery) {
                try await people.createIndex(withName: "bad", config: ValueIndexConfiguration(["name +"]))
            }
            #expect(parse?.contains("index 'bad'") == true)
            #expect(parse?.contains("name +") == true)
            let aggregate = await expectCouchetteError(.invalidQuery) {
                try await people.createIndex(withName: "agg", config: ValueIndexConfiguration(["COUNT(name)"]))
            }
            #expect(aggregate?.contains("aggregate") == true)
            let parameter = await expectCouchetteError(.invalidQuery) {
                try await people.createIndex(withName: "param", config: ValueIndexConfiguration(["name"], where: "age > $min"))
            }
            #expect(parameter?.contains("$min") == true)
            await expectCouchetteError(.invalidQuery) {
                try await people.createIndex(withName: "empty", config: ValueIndexConfiguration([]))
            }
            await expectCouchetteError(.invalidQuery) {
                try await people.createIndex(withName: "fn", config: ValueIndexConfiguration(["NOSUCH(name)"]))
            }
            await expectCouchetteError(.invalidParameter) {
                try await people.createIndex(withName: "", config: ValueIndexConfiguration(["name"]))
            }
            #expect(try await people.indexes() == [])
        }
    }

    // MARK: - Access paths

    @Test func equalityInRangeBetweenLikeAndNullTestsUseTheIndex() async throws {
        try await withPeople { db, people in
            try await people.createIndex(withName: "byAge", config: ValueIndexConfiguration(["age"]))
            try await people.createIndex(withName: "byName", config: ValueIndexConfiguration(["name"]))
            let select = "SELECT META().id AS id, age, name FROM people WHERE"
            let equal = try await expectSameWithoutIndex(db, people, "byAge", "\(select) age = 34")
            #expect(equal.count == 1)
            #expect(try await expectSameWithoutIndex(db, people, "byAge", "\(select) age = 31.5").count == 1)
            _ = try await expectSameWithoutIndex(db, people, "byAge", "\(select) age IN [22, 23.5, 'x', null, 40]")
            let range = try await expectSameWithoutIndex(db, people, "byAge", "\(select) age > 30 AND age <= 45")
            #expect(range.count > 5)
            _ = try await expectSameWithoutIndex(db, people, "byAge", "\(select) age < 30")
            _ = try await expectSameWithoutIndex(db, people, "byAge", "\(select) 30 >= age")
            _ = try await expectSameWithoutIndex(db, people, "byAge", "\(select) age BETWEEN 25 AND 35")
            let nulls = try await expectSameWithoutIndex(db, people, "byAge", "\(select) age IS NULL")
            #expect(nulls.count == 6)
            _ = try await expectSameWithoutIndex(db, people, "byAge", "\(select) age IS VALUED")
            _ = try await expectSameWithoutIndex(db, people, "byAge", "\(select) age IS NOT NULL")
            _ = try await expectSameWithoutIndex(db, people, "byAge", "\(select) age IS NOT MISSING")
            let like = try await expectSameWithoutIndex(db, people, "byName", "\(select) name LIKE 'name1%'")
            #expect(like.count == 4)
            _ = try await expectSameWithoutIndex(db, people, "byName", "\(select) name = 'name3' OR name = 'name4'")
            // MISSING and a case-insensitive collation cannot be answered from the index.
            #expect(try await explain(db, "\(select) age IS MISSING").hasPrefix("SCAN"))
            #expect(try await explain(db, "\(select) name = 'NAME1' COLLATE NOCASE").hasPrefix("SCAN"))
            #expect(try await explain(db, "\(select) name LIKE 'Name%' COLLATE NOCASE").hasPrefix("SCAN"))
            #expect(try await explain(db, "\(select) name = 'name1' OR city = 'Boston'").hasPrefix("SCAN"))
            // The bounds are shown.
            #expect(try await explain(db, "\(select) age BETWEEN 25 AND 35").contains("[.\"age\" BETWEEN 25 AND 35]"))
            // Parameters are bound at execution.
            let parameters = Parameters().setInt(34, forName: "age")
            #expect(try await ids(db, "\(select) age = $age", parameters) == ["p14"])
            #expect(try await explain(db, "\(select) age = $age", parameters).contains("USING byAge"))
        }
    }

    @Test func multiColumnPrefixesAndIndexOrder() async throws {
        try await withPeople { db, people in
            try await people.createIndex(withName: "cityName", config: ValueIndexConfiguration(["city", "name"]))
            try await people.createIndex(withName: "byAge", config: ValueIndexConfiguration(["age"]))
            let select = "SELECT META().id AS id, city, name, age FROM people"
            let both = try await expectSameWithoutIndex(db, people, "cityName", "\(select) WHERE city = 'Boston' AND name = 'name1'")
            #expect(both.count == 2)
            #expect(
                try await explain(db, "\(select) WHERE city = 'Boston' AND name = 'name1'").contains(
                    "city\" = \"Boston\" AND .\"name\" = \"name1\""))
            _ = try await expectSameWithoutIndex(db, people, "cityName", "\(select) WHERE city = 'Boston' AND name > 'name4'")
            _ = try await expectSameWithoutIndex(
                db, people, "cityName",
                "\(select) WHERE p.city = 'Denver'".replacingOccurrences(of: "FROM people", with: "FROM people AS p"))
            // ORDER BY … LIMIT in index order, both directions, with ties broken as a full scan does.
            for sql in [
                "\(select) WHERE age > 25 ORDER BY age LIMIT 5",
                "\(select) WHERE age > 25 ORDER BY age DESC LIMIT 5 OFFSET 2",
                "\(select) WHERE city = 'Austin' ORDER BY name LIMIT 3",
                "\(select) WHERE city >= 'B' ORDER BY city DESC, name DESC LIMIT 7",
                "\(select) WHERE city >= 'B' ORDER BY city LIMIT 7",
            ] {
                let plan = try await explain(db, sql)
                #expect(plan.contains("IN INDEX ORDER"), "\(sql): \(plan)")
                let index = plan.contains("cityName") ? "cityName" : "byAge"
                _ = try await expectSameWithoutIndex(db, people, index, sql)
            }
            // Without a term on the first column, documents missing it could sort first: no index.
            #expect(try await explain(db, "\(select) ORDER BY age LIMIT 5").hasPrefix("SCAN"))
        }
    }

    @Test func arrayIndexesServeAnyAndUnnest() async throws {
        try await withPeople { db, people in
            try await people.createIndex(withName: "byTag", config: ArrayIndexConfiguration(path: "tags"))
            try await people.createIndex(withName: "byPhone", config: ArrayIndexConfiguration(path: "phones", expressions: ["type", "n"]))
            let any = try await expectSameWithoutIndex(
                db, people, "byTag",
                "SELECT META().id AS id FROM people WHERE ANY t IN tags SATISFIES t = 't4' END")
            #expect(any.count == 8)
            _ = try await expectSameWithoutIndex(
                db, people, "byTag",
                "SELECT META().id AS id FROM people AS p WHERE ANY t IN p.tags SATISFIES t IN ['t1', 't2'] END")
            _ = try await expectSameWithoutIndex(
                db, people, "byPhone",
                "SELECT META().id AS id FROM people WHERE ANY ph IN phones SATISFIES ph.type = 'work' AND ph.n < 10 END")
            let unnest = try await expectSameWithoutIndex(
                db, people, "byTag",
                "SELECT META(p).id AS id, t FROM people AS p UNNEST p.tags AS t WHERE t = 't2'")
            #expect(unnest.count == 21)
            #expect(
                try await explain(db, "SELECT META().id AS id FROM people WHERE EVERY t IN tags SATISFIES t = 't4' END").hasPrefix("SCAN"))
        }
    }

    @Test func partialIndexesOnlyWhenTheQueryImpliesTheirCondition() async throws {
        try await withPeople { db, people in
            try await people.createIndex(withName: "bostonByAge", config: ValueIndexConfiguration(["age"], where: "city = 'Boston'"))
            let sql = "SELECT META().id AS id FROM people WHERE city = 'Boston' AND age > 30"
            let found = try await expectSameWithoutIndex(db, people, "bostonByAge", sql)
            #expect(!found.isEmpty)
            #expect(
                try await explain(db, "SELECT META().id AS id FROM people AS x WHERE x.age > 30 AND x.city = 'Boston'").contains(
                    "USING bostonByAge"))
            #expect(try await explain(db, "SELECT META().id AS id FROM people WHERE age > 30").hasPrefix("SCAN"))
            #expect(try await explain(db, "SELECT META().id AS id FROM people WHERE city = 'Austin' AND age > 30").hasPrefix("SCAN"))
            #expect(try await explain(db, "SELECT META().id AS id FROM people WHERE city = 'Boston' OR age > 30").hasPrefix("SCAN"))
        }
    }

    @Test func joinsOnTheJoinedDocumentsIdLookDocumentsUp() async throws {
        try await withPeople { db, people in
            let orders = try await db.createCollection(name: "orders")
            try await db.inBatch { batch in
                for i in 0..<30 {
                    let buyer: Any = i % 6 == 5 ? 17 : (i % 6 == 4 ? "nobody" : String(format: "p%02d", (i * 7) % 40))
                    try batch.save(
                        document: MutableDocument(id: "o\(i)").setValue(buyer, forKey: "person").setInt(i, forKey: "amount"), in: orders)
                }
            }
            try await people.delete(document: try #require(try await people.document(id: "p07")))
            for kind in ["", "LEFT "] {
                let byID =
                    "SELECT META(o).id AS o, p.name FROM orders AS o \(kind)JOIN people AS p ON META(p).id = o.person WHERE o.amount > 3"
                let hashed =
                    "SELECT META(o).id AS o, p.name FROM orders AS o \(kind)JOIN people AS p ON META(p).id || '' = o.person WHERE o.amount > 3"
                #expect(try await explain(db, byID).contains("(lookup by id)"))
                #expect(try await explain(db, hashed).contains("(hash)"))
                let rows = try await queryJSON(db, byID)
                #expect(rows == (try await queryJSON(db, hashed)))
                #expect(rows.count > 10)
                // WHERE conjuncts on the FROM document alone run before the join; the same
                // condition made to read the joined side (without changing its truth) cannot.
                let early = byID + " AND META(o).id LIKE 'o1%' AND (p.city = 'Boston' OR p.city IS MISSING)"
                let late = byID + " AND (META(o).id LIKE 'o1%' OR p.zzz = 1) AND (p.city = 'Boston' OR p.city IS MISSING)"
                #expect(try await explain(db, early).contains("FILTER o BEFORE JOINS"))
                #expect(try await queryJSON(db, early) == (try await queryJSON(db, late)))
            }
        }
    }

    // MARK: - Maintenance

    @Test func indexFollowsUpdatesDeletesPurgesExpirationAndBatches() async throws {
        try await withPeople { db, people in
            try await people.createIndex(withName: "byName", config: ValueIndexConfiguration(["name"]))
            let sql = "SELECT META().id AS id FROM people WHERE name = 'zed' ORDER BY META().id"
            #expect(try await explain(db, sql).contains("USING byName"))
            #expect(try await ids(db, sql) == [])

            let first = try #require(try await people.document(id: "p01")).toMutable()
            try await people.save(document: first.setString("zed", forKey: "name"))
            #expect(try await ids(db, sql) == ["p01"])
            try await people.save(document: first.setString("other", forKey: "name"))  // update away
            #expect(try await ids(db, sql) == [])
            try await people.save(document: first.setString("zed", forKey: "name"))

            try await db.inBatch { batch in
                for id in ["p02", "p03", "new"] {
                    try batch.save(document: MutableDocument(id: id).setString("zed", forKey: "name"), in: people)
                }
            }
            #expect(try await ids(db, sql) == ["new", "p01", "p02", "p03"])
            // A batch that fails writes nothing, index included.
            await #expect(throws: (any Error).self) {
                try await db.inBatch { batch in
                    try batch.save(document: MutableDocument(id: "p04").setString("zed", forKey: "name"), in: people)
                    throw CouchetteError(.invalidParameter, "abandon")
                }
            }
            #expect(try await ids(db, sql) == ["new", "p01", "p02", "p03"])

            try await people.delete(document: try #require(try await people.document(id: "p02")))
            try await people.purge(id: "p03")
            #expect(try await ids(db, sql) == ["new", "p01"])
            // Re-saving a deleted document indexes it again.
            try await people.save(document: MutableDocument(id: "p02").setString("zed", forKey: "name"))
            #expect(try await ids(db, sql) == ["new", "p01", "p02"])

            try await people.setDocumentExpiration(id: "new", expiration: Date().addingTimeInterval(-1))
            #expect(try await ids(db, sql) == ["p01", "p02"])  // expired: hidden at once
            #expect(try await eventually { try await rawEntries(people, "byName") == 39 })  // 40 + new - p03 purged - new purged
            try await db.performMaintenance(type: .reindex)
            #expect(try await rawEntries(people, "byName") == 39)
            #expect(try await ids(db, sql) == ["p01", "p02"])
        }
    }

    @Test func droppingACollectionDropsItsIndexes() async throws {
        try await withPeople { db, people in
            try await people.createIndex(withName: "byName", config: ValueIndexConfiguration(["name"]))
            #expect(try await rawEntries(people, "byName") == 40)
            let number = try #require(try Self.number(people, "byName"))
            try await db.deleteCollection(name: "people")
            let again = try await db.createCollection(name: "people")
            #expect(try await again.indexes() == [])
            let left = try Self.entryCount(db.reader, number)
            #expect(left == 0)
        }
    }

    @Test func buildingALargeCollectionTakesSeveralTransactions() async throws {
        try await withDatabase { db, _ in
            let items = try await db.createCollection(name: "items")
            let total = IndexRegistry.buildBatchSize * 2 + 17
            try await db.inBatch { batch in
                for i in 0..<total {
                    try batch.save(document: MutableDocument(id: "i\(i)").setInt(i % 100, forKey: "n"), in: items)
                }
            }
            let before = try db.reader.read { $0.transactionID }
            try await items.createIndex(withName: "byN", config: ValueIndexConfiguration(["n"]))
            let after = try db.reader.read { $0.transactionID }
            #expect(after - before >= 3)  // define + three build steps
            #expect(try await rawEntries(items, "byN") == total)
            let count = try await db.createQuery("SELECT COUNT(*) AS c FROM items WHERE n = 42").execute().allResults().first?.int(
                forKey: "c")
            #expect(count == total / 100 + (total % 100 > 42 ? 1 : 0))
        }
    }

    private static func number(_ collection: Collection, _ name: String) throws -> UInt32? {
        try collection.reader.read { try $0.indexDefinitions(collection.spec) }.first { $0.name == name }?.definition.number
    }

    private func rawEntries(_ collection: Collection, _ name: String) async throws -> Int {
        guard let number = try Self.number(collection, name) else { return -1 }
        return try Self.entryCount(collection.reader, number)
    }

    /// The entries stored under index `number`, read through the same seam queries use.
    private static func entryCount(_ reader: StoreReader, _ number: UInt32) throws -> Int {
        let prefix = StoreLayout.indexEntriesPrefix(number)
        return try reader.read { snapshot in
            var count = 0
            try snapshot.forEachIndexEntry(from: prefix, to: KeyEncoding.successor(ofPrefix: prefix)) { _, _ in
                count += 1
                return true
            }
            return count
        }
    }
}

/// LIKE on plain ASCII takes a byte path: it must agree with Character matching everywhere.
@Suite(.tags(.sanitizeAddress, .sanitizeAddress)) struct LikeFastPathTests {
    @Test func asciiBytePathAgreesWithCharacterMatching() async {
        await onAThreadOfItsOwn {
            var random = ValueEncodingTests.SeededGenerator(seed: 0x11CE)
            let alphabet: [Character] = ["a", "b", "A", "%", "_", "\\", "\r", "\n", "é", " "]
            func word(_ length: Int) -> String {
                String((0..<length).map { _ in alphabet[Int.random(in: 0..<alphabet.count, using: &random)] })
            }
            var mismatches: [String] = []
            for _ in 0..<20_000 {
                let text = word(Int.random(in: 0...6, using: &random)), pattern = word(Int.random(in: 0...5, using: &random))
                if LikePattern.matches(text, pattern, .binary) != LikePattern.characterMatch(text, pattern, .binary) {
                    mismatches.append("\(text.debugDescription) LIKE \(pattern.debugDescription)")
                }
            }
            #expect(mismatches.isEmpty, "\(mismatches.prefix(5))")
        }
    }
}
