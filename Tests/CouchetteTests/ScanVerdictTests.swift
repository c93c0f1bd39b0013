import Foundation
import Testing

@testable import Couchette

/// A full scan whose body precheck finds every conjunct of the filter after the scan certainly
/// true (``BodyFilter/Judgement/passes``) hands the row on without that filter evaluated again,
/// and a JOIN on `META(joined).id` that is the whole ON clause takes the key lookup's word for it.
/// Both give exactly the rows of the same query written so that neither applies.
@Suite struct ScanVerdictTests {
    private static func plan(_ text: String) throws -> QueryPlan {
        let spec = CollectionSpec(scope: "_default", name: "_default", number: 1)
        return try QueryCompiler.compile(try Parser.parse(text), databaseName: "test") { _, _ in spec }
    }

    private static func judge(_ plan: QueryPlan, _ json: String, least: Int64 = 10) throws -> BodyFilter.Judgement {
        let filter = try #require(try plan.precheck?.bind(EvaluationContext(plan, parameters: ["least": .int(least)])))
        return try JSON.encodeBinary(json).withUnsafeBytes { filter.judge($0) }
    }

    @Test func onlyAPrecheckOfEveryConjunctPassesRows() throws {
        let whole = try Self.plan("SELECT META().id FROM _ WHERE name.last LIKE '%an%' AND visits >= $least")
        #expect(whole.precheck?.decidesFilter == true)
        #expect(try Self.judge(whole, #"{"name":{"last":"Hansen"},"visits":12}"#) == .passes)
        #expect(try Self.judge(whole, #"{"name":{"last":"Hansen"},"visits":9}"#) == .rejects)
        // Not plain ASCII, a double: the evaluators decide.
        #expect(try Self.judge(whole, #"{"name":{"last":"Hans\u00e9n"},"visits":12}"#) == .unknown)
        #expect(try Self.judge(whole, #"{"name":{"last":"Hansen"},"visits":12.5}"#) == .unknown)

        // A conjunct the precheck cannot take: rows it accepts still meet the evaluators.
        let partial = try Self.plan("SELECT META().id FROM _ WHERE name.last LIKE '%an%' AND visits + 0 >= $least")
        #expect(partial.precheck?.decidesFilter == false)
        #expect(try Self.judge(partial, #"{"name":{"last":"Hansen"},"visits":12}"#) == .unknown)

        // With a JOIN, the conjuncts on the FROM document alone are the filter after the scan.
        let joined = try Self.plan(
            "SELECT META(o).id FROM _ AS o JOIN _ AS p ON META(p).id = o.person WHERE o.visits >= $least AND p.visits > 1")
        #expect(joined.precheck?.decidesFilter == true)
        let constant = try Self.plan(
            "SELECT META(o).id FROM _ AS o JOIN _ AS p ON META(p).id = o.person WHERE o.visits >= $least AND $least > 1")
        #expect(constant.precheck?.decidesFilter == false)
    }

    @Test func onlyAnIDEqualityThatIsTheWholeOnIsDecidedByTheLookup() throws {
        func hash(_ on: String) throws -> HashCondition? {
            let plan = try Self.plan("SELECT META(o).id FROM _ AS o JOIN _ AS p ON \(on)")
            guard case .join(_, _, _, _, let hash) = plan.stages[0] else { return nil }
            return hash
        }
        #expect(try hash("META(p).id = o.person")?.lookupDecidesOn == true)
        #expect(try hash("o.person = META(p).id")?.lookupDecidesOn == true)
        #expect(try hash("META(p).id = o.person AND p.visits > 1")?.lookupDecidesOn == false)
        #expect(try hash("p.email = o.person")?.lookupDecidesOn == false)
    }

    /// Orders and people with amounts and names of every type: each query gives the rows of its
    /// `NOT NOT (…)` form, which no precheck takes, and of its ON written with `OR FALSE`.
    @Test func decidedRowsAreTheRowsTheEvaluatorsGive() async throws {
        try await withDatabase { database, _ in
            let people = try await database.createCollection(name: "people")
            let orders = try await database.createCollection(name: "orders")
            let amounts: [Any?] = [nil, NSNull(), 0, 799, 800, 801, 800.0, 800.5, -1, "900", "a\u{E9}", [900], ["n": 900], true]
            let names: [Any?] = [nil, "Hansen", "Smith", "Hans\u{E9}n", 7, NSNull()]
            try await database.inBatch { batch in
                for (number, name) in names.enumerated() {
                    let person = MutableDocument(id: "p\(number)").setInt(number, forKey: "visits")
                    if let name { person.setValue(name, forKey: "last") }
                    try batch.save(document: person, in: people)
                }
                for (number, amount) in amounts.enumerated() {
                    for person in 0...names.count {  // one buyer who does not exist
                        let order = MutableDocument(id: String(format: "o%02d-%d", number, person)).setString(
                            "p\(person)", forKey: "person")
                        if let amount { order.setValue(amount, forKey: "amount") }
                        try batch.save(document: order, in: orders)
                    }
                }
            }
            let select = "SELECT META(o).id AS id, p.last AS last FROM orders AS o"
            let wheres = [
                "o.amount >= $least", "o.amount = 800", "o.amount < $least AND p.visits > 2", "o.amount >= $least AND p.last LIKE '%an%'",
                "o.person LIKE 'p1%'", "o.amount > 'a' AND o.person >= 'p2'",
            ]
            var checked = 0
            for kind in ["JOIN", "LEFT JOIN"] {
                for on in ["META(p).id = o.person", "o.person = META(p).id AND p.visits >= 1"] {
                    for condition in wheres {
                        let parameters = Parameters().setInt(800, forName: "least")
                        func rows(_ text: String) async throws -> [String] {
                            let query = try database.createQuery(text)
                            query.parameters = parameters
                            return try await query.execute().map { "\($0.string(at: 0) ?? "-") \($0.string(at: 1) ?? "-")" }
                        }
                        let fast = try await rows("\(select) \(kind) people AS p ON \(on) WHERE \(condition)")
                        let slow = try await rows("\(select) \(kind) people AS p ON (\(on)) OR FALSE WHERE NOT NOT (\(condition))")
                        #expect(fast == slow, "\(kind) ON \(on) WHERE \(condition)")
                        checked += fast.count
                    }
                }
            }
            #expect(checked > 100)
        }
    }
}
