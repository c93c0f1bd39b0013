import Foundation
import Testing

@testable import Couchette

/// LEFT OUTER JOIN rows without a right side (within and across collections), UNNEST of
/// missing, empty and scalar values, and GROUP BY with several aggregates ordered by a grouped
/// column.
@Suite(.tags(.sanitizeAddress)) struct SQLPPJoinUnnestGroupTests {
    @Test func leftOuterJoinKeepsRowsWithoutARightSide() async throws {
        try await withDatabase { db, _ in
            for (id, json) in [
                ("airline_1", #"{"type":"airline","name":"Alpha"}"#), ("airline_2", #"{"type":"airline","name":"Beta"}"#),
                ("route_1", #"{"type":"route","airline":"airline_1","dest":"SFO"}"#),
                ("route_2", #"{"type":"route","airline":"airline_1","dest":"LAX"}"#),
            ] {
                try await SQLPP.save(db, id, json)
            }
            let rows = try await queryJSON(
                db,
                """
                SELECT a.name, r.dest FROM _ AS a LEFT OUTER JOIN _ AS r ON r.airline = META(a).id AND r.type = 'route'
                WHERE a.type = 'airline' ORDER BY a.name, r.dest
                """)
            #expect(rows == [#"{"name":"Alpha","dest":"LAX"}"#, #"{"name":"Alpha","dest":"SFO"}"#, #"{"name":"Beta"}"#])
            let missing = try await queryJSON(
                db,
                """
                SELECT a.name FROM _ AS a LEFT JOIN _ AS r ON r.airline = META(a).id WHERE a.type = 'airline' AND r IS MISSING
                """)
            #expect(missing == [#"{"name":"Beta"}"#])
            let starred = try await queryJSON(
                db,
                """
                SELECT * FROM _ AS a LEFT JOIN _ AS r ON META(r).id = a.best WHERE META(a).id = 'airline_2'
                """)
            #expect(starred == [#"{"a":{"name":"Beta","type":"airline"}}"#])
        }
    }

    @Test func leftOuterJoinAcrossCollections() async throws {
        try await withDatabase { db, _ in
            let airlines = try await db.createCollection(name: "airlines", scope: "travel")
            let routes = try await db.createCollection(name: "routes", scope: "travel")
            try await airlines.save(document: MutableDocument(id: "a1", json: #"{"name":"Alpha","code":"AL"}"#))
            try await airlines.save(document: MutableDocument(id: "a2", json: #"{"name":"Beta","code":"BE"}"#))
            try await airlines.save(document: MutableDocument(id: "a3", json: #"{"name":"Gamma"}"#))
            try await routes.save(document: MutableDocument(id: "r1", json: #"{"code":"AL","dest":"SFO"}"#))
            let rows = try await queryJSON(
                db,
                """
                SELECT a.name, r.dest, META(r).id AS route FROM travel.airlines AS a
                LEFT OUTER JOIN travel.routes AS r ON r.code = a.code ORDER BY a.name
                """)
            #expect(rows == [#"{"name":"Alpha","dest":"SFO","route":"r1"}"#, #"{"name":"Beta"}"#, #"{"name":"Gamma"}"#])
            let counted = try await queryJSON(
                db,
                """
                SELECT a.name, COUNT(r.dest) AS n FROM travel.airlines AS a LEFT JOIN travel.routes AS r ON r.code = a.code
                GROUP BY a.name ORDER BY a.name
                """)
            #expect(counted == [#"{"name":"Alpha","n":1}"#, #"{"name":"Beta","n":0}"#, #"{"name":"Gamma","n":0}"#])
        }
    }

    @Test func unnestOfMissingEmptyAndScalarValues() async throws {
        try await withDatabase { db, _ in
            for (id, json) in [
                ("1", #"{"v":[1,2]}"#), ("2", #"{"v":[]}"#), ("3", #"{"v":5}"#), ("4", #"{}"#), ("5", #"{"v":null}"#),
                ("6", #"{"v":{"b":2,"a":1}}"#), ("7", #"{"v":"s"}"#),
            ] {
                try await SQLPP.save(db, id, json)
            }
            let rows = try await queryJSON(db, "SELECT META(d).id AS id, u FROM _ AS d UNNEST d.v AS u ORDER BY META(d).id, u")
            #expect(
                rows == [
                    #"{"id":"1","u":1}"#, #"{"id":"1","u":2}"#, #"{"id":"3","u":5}"#, #"{"id":"5","u":null}"#,
                    #"{"id":"6","u":1}"#, #"{"id":"6","u":2}"#, #"{"id":"7","u":"s"}"#,
                ])
            #expect(try await queryJSON(db, "SELECT COUNT(*) AS n FROM _ AS d UNNEST d.v AS u WHERE META(d).id = '3'") == [#"{"n":1}"#])
        }
    }

    @Test func unnestOfScalarsUsesArrayIndexesToo() async throws {
        try await withDatabase { db, _ in
            let collection = try db.defaultCollection()
            for (id, json) in [("1", #"{"v":[1,2]}"#), ("2", #"{"v":2}"#), ("3", #"{"v":[3]}"#)] { try await SQLPP.save(db, id, json) }
            try await collection.createIndex(withName: "byV", config: ArrayIndexConfiguration(path: "v"))
            let sql = "SELECT META(d).id AS id FROM _ AS d UNNEST d.v AS u WHERE u = 2 ORDER BY META(d).id"
            #expect(try await db.createQuery(sql).explain().contains("byV"))
            #expect(try await queryJSON(db, sql) == [#"{"id":"1"}"#, #"{"id":"2"}"#])
            #expect(try await SQLPP.ids(db, where: "ANY x IN v SATISFIES x = 2 END") == ["1"])

            // An array index stored before scalars were members is left unused (its entries lack
            // document 2) until createIndex rebuilds it.
            let environment = collection.core.environment
            let key = StoreLayout.indexDefinitionKey(collection.spec.number, "byV")
            try environment.write { txn in
                let stored = try #require(try txn.get(environment.tables.indexes, key: key))
                var definition = try IndexDefinition(decoding: Array(stored.dropFirst()))
                definition.membersIncludeScalars = nil
                try txn.put(environment.tables.indexes, key: key, value: [1] + (try definition.encoded()))
            }
            #expect(try await db.createQuery(sql).explain().hasPrefix("SCAN"))
            #expect(try await queryJSON(db, sql) == [#"{"id":"1"}"#, #"{"id":"2"}"#])
            try await collection.createIndex(withName: "byV", config: ArrayIndexConfiguration(path: "v"))
            #expect(try await db.createQuery(sql).explain().contains("byV"))
            #expect(try await queryJSON(db, sql) == [#"{"id":"1"}"#, #"{"id":"2"}"#])
        }
    }

    @Test func groupByWithSeveralAggregatesOrderedByAGroupedColumn() async throws {
        try await withDatabase { db, _ in
            let people = [("CA", 30, "ann"), ("CA", 40, "bob"), ("NY", 25, "cy"), ("NY", 35, "di"), ("NY", 45, "ed"), ("TX", 50, "fi")]
            for (index, (state, age, name)) in people.enumerated() {
                try await SQLPP.save(db, "p\(index)", #"{"state":"\#(state)","age":\#(age),"name":"\#(name)"}"#)
            }
            let rows = try await queryJSON(
                db,
                """
                SELECT state, COUNT(*) AS n, SUM(age) AS total, MIN(age) AS youngest, MAX(age) AS oldest, AVG(age) AS mean,
                       ARRAY_AGG(name) AS names
                FROM _ GROUP BY state ORDER BY state DESC
                """)
            #expect(
                rows == [
                    #"{"state":"TX","n":1,"total":50,"youngest":50,"oldest":50,"mean":50,"names":["fi"]}"#,
                    #"{"state":"NY","n":3,"total":105,"youngest":25,"oldest":45,"mean":35,"names":["cy","di","ed"]}"#,
                    #"{"state":"CA","n":2,"total":70,"youngest":30,"oldest":40,"mean":35,"names":["ann","bob"]}"#,
                ])
            let ordered = try await queryJSON(db, "SELECT COUNT(*) AS n, MAX(age) AS oldest FROM _ GROUP BY state ORDER BY state")
            #expect(ordered == [#"{"n":2,"oldest":40}"#, #"{"n":3,"oldest":45}"#, #"{"n":1,"oldest":50}"#])
            let byAggregate = try await queryJSON(
                db, "SELECT state, SUM(age) AS total FROM _ GROUP BY state HAVING COUNT(*) > 1 ORDER BY total DESC, state")
            #expect(byAggregate == [#"{"state":"NY","total":105}"#, #"{"state":"CA","total":70}"#])
        }
    }
}
