import Foundation
import Testing

@testable import Couchette

/// The WHERE conjuncts a full scan tries on stored bodies in place (``BodyPrecheck``) reject only
/// documents the WHERE rejects: every comparison and LIKE below, over values of every type, gives
/// the rows of the same condition written so that no precheck applies (`NOT NOT (…)`).
@Suite struct BodyPrecheckTests {
    /// One document per value of `v` (MISSING included), also nested as `n.v` and in `a`.
    private static var values: [Any?] {
        [
            nil, NSNull(), true, false, 0, 1, 2, 3, -2, Int64.max, Int64.min, 1.5, 2.0, -0.5,
            "", "a", "an", "Anna", "ban", "banana", "b", "bz", "B", "b\u{E9}an", "caf\u{E9}", "x\r\ny", "%", "_n",
            [1, 2], ["an"], ["x": 1], ["v": "an"],
        ]
    }

    private func withValues(_ body: (Database) async throws -> Void) async throws {
        try await withDatabase { database, _ in
            let items = try await database.createCollection(name: "items")
            try await database.inBatch { batch in
                for (number, value) in Self.values.enumerated() {
                    let document = MutableDocument(id: String(format: "d%02d", number))
                    if let value {
                        document.setValue(value, forKey: "v")
                        document.setValue(["v": value], forKey: "n")
                        document.setValue([value, number], forKey: "a")
                    }
                    try batch.save(document: document, in: items)
                }
            }
            try await body(database)
        }
    }

    private func ids(_ database: Database, _ condition: String, _ parameters: Parameters?) async throws -> [String] {
        let query = try database.createQuery("SELECT META().id FROM items WHERE \(condition)")
        query.parameters = parameters
        return try await query.execute().map { $0.string(at: 0) ?? "" }
    }

    @Test func comparisonsAndLikeRejectOnlyWhatTheWhereRejects() async throws {
        try await withValues { database in
            let constants = ["2", "3", "-2", "1.5", "2.0", "'b'", "'an'", "''", "'caf\u{E9}'", "null", "true", "$p"]
            let parameters: [Any?] = [2, "b", NSNull(), 2.5, "b\u{E9}an", ["an"]]
            var conditions: [String] = []
            for path in ["v", "n.v", "a[0]", "a[-2]", "items.v", "nothing"] {
                for op in ["=", "<", "<=", ">", ">="] {
                    for constant in constants {
                        conditions.append("\(path) \(op) \(constant)")
                        conditions.append("\(constant) \(op) \(path)")
                    }
                }
                for pattern in ["'%an%'", "'b%'", "'_n'", "'%'", "'\\%'", "'%a_'", "'B%'", "'%\u{E9}%'", "''"] {
                    conditions.append("\(path) LIKE \(pattern)")
                    conditions.append("\(path) NOT LIKE \(pattern)")
                }
            }
            conditions.append("v >= 1 AND v LIKE '%'")
            conditions.append("n.v LIKE '%an%' AND a[1] < 20")
            var checked = 0
            for condition in conditions {
                for parameter in condition.contains("$p") ? parameters : [nil] {
                    let values = parameter.map { Parameters().setValue($0, forName: "p") }
                    let expected = try await ids(database, "NOT NOT (\(condition))", values)
                    let found = try await ids(database, condition, values)
                    #expect(found == expected, "\(condition) with \(String(describing: parameter))")
                    checked += 1
                }
            }
            #expect(checked > 700)
        }
    }

    @Test func aPrecheckRejectsInPlaceAndLeavesDoubtToTheEvaluators() throws {
        let query = "SELECT META().id FROM _ WHERE name.last LIKE '%an%' AND visits >= $least AND tag = 'x'"
        let statement = try Parser.parse(query)
        let spec = CollectionSpec(scope: "_default", name: "_default", number: 1)
        let plan = try QueryCompiler.compile(statement, databaseName: "test") { _, _ in spec }
        let precheck = try #require(plan.precheck)
        #expect(precheck.terms.count == 3)
        let context = EvaluationContext(plan, parameters: ["least": .int(10)])
        let filter = try #require(try precheck.bind(context))
        func body(_ json: String) throws -> [UInt8] { try JSON.encodeBinary(json) }
        let accepted = try body(#"{"name":{"last":"Hansen"},"visits":12,"tag":"x"}"#)
        #expect(!accepted.withUnsafeBytes { filter.rejects($0) })
        for rejected in [
            #"{"name":{"last":"Smith"},"visits":12,"tag":"x"}"#, #"{"name":{"last":"Hansen"},"visits":9,"tag":"x"}"#,
            #"{"name":{"last":"Hansen"},"visits":12,"tag":"y"}"#, #"{"name":{},"visits":12,"tag":"x"}"#,
            #"{"name":{"last":7},"visits":12,"tag":"x"}"#, "{}",
        ] {
            #expect(try body(rejected).withUnsafeBytes { filter.rejects($0) }, "\(rejected)")
        }
        // Not plain ASCII, a double, another type: left to the evaluators.
        for unsure in [
            #"{"name":{"last":"Hans\u00e9n"},"visits":12,"tag":"x"}"#, #"{"name":{"last":"Hansen"},"visits":9.5,"tag":"x"}"#,
            #"{"name":{"last":"Hansen"},"visits":"many","tag":"x"}"#,
        ] {
            #expect(!(try body(unsure).withUnsafeBytes { filter.rejects($0) }), "\(unsure)")
        }
        #expect([0xFF, 0x00].withUnsafeBytes { filter.rejects($0) })  // damaged: MISSING
    }
}
