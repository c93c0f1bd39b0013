import Foundation
import Testing

@testable import Couchette

/// Numbers from documents, queries, parameters and peers never trap a conversion: out-of-range
/// values give the documented null or MISSING (N1QL: integer overflow becomes a double), an
/// unusable LIMIT an `.invalidQuery`, and a peer's revision id beyond the highest generation is
/// refused at the door.
@Suite struct NumericConversionTests {
    static func values(_ database: Database, _ expression: String, _ parameters: [String: Any] = [:]) async throws -> String {
        let query = try database.createQuery("SELECT \(expression) AS v FROM _ LIMIT 1")
        if !parameters.isEmpty {
            let bound = Parameters()
            for (name, value) in parameters { _ = bound.setValue(value, forName: name) }
            query.parameters = bound
        }
        return try await query.execute().map { $0.toJSON() }.first ?? "no row"
    }

    static func seeded(_ database: Database) async throws {
        try await database.defaultCollection().save(document: MutableDocument(id: "one", data: ["a": [10, 20, 30], "n": 1]))
    }

    @Test func theExamplesOfTheIssue() async throws {
        try await withDatabase { database, _ in
            try await Self.seeded(database)
            // Constant expressions are folded (for index bounds) inside createQuery.
            #expect(try await Self.values(database, "ROUND(1.5, 1e300)") == #"{"v":1.5}"#)
            #expect(try await Self.values(database, "ROUND(1.5, -1e300)") == #"{"v":0}"#)
            #expect(try await Self.values(database, "TRUNC(2.5, 1e300)") == #"{"v":2.5}"#)
            #expect(try await Self.values(database, "ROUND(123.456, 1)") == #"{"v":123.5}"#)
            _ = try database.createQuery("SELECT n FROM _ WHERE n = ROUND(1.5, 1e300)")
            // IDIV overflows into a double, as integer arithmetic does.
            #expect(try await Self.values(database, "IDIV($m, -1) = POWER(2, 63)", ["m": Int64.min]) == #"{"v":true}"#)
            #expect(try await Self.values(database, "IDIV($m, 1)", ["m": Int64.min]) == #"{"v":-9223372036854775808}"#)
            #expect(try await Self.values(database, "IDIV(-9223372036854775808, -1) = POWER(2, 63)") == #"{"v":true}"#)
            #expect(try await Self.values(database, "IDIV(7, 1e300)") == #"{"v":0}"#)
            #expect(try await Self.values(database, "IDIV(1e300, 7) > 1e299") == #"{"v":true}"#)
            #expect(try await Self.values(database, "IDIV(9007199254740993, 1)") == #"{"v":9007199254740993}"#)
            #expect(try await Self.values(database, "IDIV(-7.9, 2)") == #"{"v":-3}"#)
            // Dates outside the years 0000–9999 are null, like unparseable ones.
            #expect(try await Self.values(database, "DATE_ADD_MILLIS(0, 1e300, 'day')") == #"{"v":null}"#)
            #expect(try await Self.values(database, "DATE_ADD_MILLIS(0, -1e300, 'month')") == #"{"v":null}"#)
            #expect(try await Self.values(database, "DATE_ADD_MILLIS(1e300, 1, 'day')") == #"{"v":null}"#)
            #expect(try await Self.values(database, "DATE_ADD_MILLIS(0, 1, 'day')") == #"{"v":86400000}"#)
            #expect(try await Self.values(database, "DATE_ADD_MILLIS(0, 9223372036854775807, 'millisecond')") == #"{"v":null}"#)
            #expect(try await Self.values(database, "DATE_ADD_STR('2020-01-31T00:00:00Z', 1e300, 'year')") == #"{"v":null}"#)
            // A day past the month's end rolls over, as in N1QL and Couchbase Lite (2020-02-31 is March 2).
            #expect(try await Self.values(database, "DATE_ADD_STR('2020-01-31T00:00:00Z', 1, 'month')") == #"{"v":"2020-03-02T00:00:00Z"}"#)
            #expect(try await Self.values(database, "DATE_DIFF_MILLIS(1e300, 0, 'day')") == #"{"v":null}"#)
            #expect(try await Self.values(database, "DATE_DIFF_MILLIS(-9223372036854775808, 9223372036854775807, 'day')") == #"{"v":null}"#)
            #expect(try await Self.values(database, "MILLIS_TO_TZ(0, 1e300)") == #"{"v":null}"#)
            #expect(try await Self.values(database, "MILLIS_TO_TZ(0, 60)") == #"{"v":"1970-01-01T01:00:00+0100"}"#)
            // Subscripts out of any array's range are MISSING.
            #expect(try await Self.values(database, "a[1e300]") == "{}")
            #expect(try await Self.values(database, "a[-1e300]") == "{}")
            #expect(try await Self.values(database, "a[$i]", ["i": 1e300]) == "{}")
            #expect(try await Self.values(database, "a[$i]", ["i": -9_223_372_036_854_775_808 as Int64]) == "{}")
            #expect(try await Self.values(database, "a[$i]", ["i": 1.0]) == #"{"v":20}"#)
            // REGEXP_REPLACE's count saturates; negative means all.
            #expect(try await Self.values(database, "REGEXP_REPLACE('aaa', 'a', 'b', 1e300)") == #"{"v":"bbb"}"#)
            #expect(try await Self.values(database, "REGEXP_REPLACE('aaa', 'a', 'b', -1e300)") == #"{"v":"bbb"}"#)
            #expect(try await Self.values(database, "REGEXP_REPLACE('aaa', 'a', 'b', 1)") == #"{"v":"baa"}"#)
            #expect(try await Self.values(database, "REGEXP_REPLACE('aaa', 'a', 'b', 0)") == #"{"v":"aaa"}"#)
        }
    }

    @Test func limitAndOffsetParametersOfAnySize() async throws {
        try await withDatabase { database, _ in
            let collection = try database.defaultCollection()
            for number in 0..<5 { try await collection.save(document: MutableDocument(id: "d\(number)", data: ["n": number])) }
            func ids(_ sql: String, _ parameters: [String: Any]) async throws -> [String] {
                let query = try database.createQuery(sql)
                let bound = Parameters()
                for (name, value) in parameters { _ = bound.setValue(value, forName: name) }
                query.parameters = bound
                return try await query.execute().compactMap { $0.string(forKey: "id") }
            }
            let plain = "SELECT META().id AS id FROM _ LIMIT $n OFFSET $o"
            let sorted = "SELECT META().id AS id FROM _ ORDER BY n DESC LIMIT $n OFFSET $o"
            for sql in [plain, sorted] {
                let all = sql == plain ? ["d0", "d1", "d2", "d3", "d4"] : ["d4", "d3", "d2", "d1", "d0"]
                #expect(try await ids(sql, ["n": 1e300, "o": 0]) == all)
                #expect(try await ids(sql, ["n": 1e300, "o": 1e300]) == [])
                #expect(try await ids(sql, ["n": Int64.max, "o": Int64.max]) == [])
                #expect(try await ids(sql, ["n": Int64.max, "o": 3]) == Array(all.suffix(2)))
                #expect(try await ids(sql, ["n": -1e300, "o": -1e300]) == [])
                #expect(try await ids(sql, ["n": 2.9, "o": 1]) == Array(all[1..<3]))
                await expectCouchetteError(.invalidQuery) { _ = try await ids(sql, ["n": "many", "o": 0]) }
            }
        }
    }

    /// Every scalar function, called with seeded random arguments mixing extreme numbers
    /// (±1e300, ±2^63, Int64.min, subnormals), dates, date parts, patterns and containers: each
    /// call returns a value or throws a ``CouchetteError``; none traps.
    @Test func everyFunctionSurvivesExtremeArguments() throws {
        let numbers: [Datum] = [
            .int(0), .int(1), .int(-1), .int(.max), .int(.min), .int(.max - 1), .int(9_007_199_254_740_993),
            .double(1e300), .double(-1e300), .double(9.223372036854775807e18), .double(-9.223372036854775808e18),
            .double(1.5), .double(-0.0), .double(.leastNonzeroMagnitude), .double(.greatestFiniteMagnitude),
            .double(-.greatestFiniteMagnitude), .double(253_402_300_800_000), .double(-62_167_219_200_001),
        ]
        let others: [Datum] = [
            .null, .bool(true), .string(""), .string("day"), .string("millennium"), .string("month"), .string("a+"),
            .string("(a+)+b"), .string("aaaa"), .string("2018-10-23T11:33:01-0700"), .string("9999-12-31T23:59:59Z"),
            .string("0000-01-01"), .string("Europe/Paris"), .string("1111-11-11 11:11:11.111"), .string("\\"),
            .array([.int(.max), .int(1)]), .array([.double(1e300), .double(1e300)]), .object(["a": .int(.min)]),
        ]
        var random = ValueEncodingTests.SeededGenerator(seed: 0x15_01)
        var calls = 0
        for (name, function) in FunctionLibrary.functions.sorted(by: { $0.key < $1.key }) {
            let most = min(function.arity.upperBound, function.arity.lowerBound + 2)
            for _ in 0..<150 {
                let count = Int.random(in: function.arity.lowerBound...most, using: &random)
                let arguments: [Datum?] = (0..<count).map { _ in
                    Bool.random(using: &random) ? numbers.randomElement(using: &random) : others.randomElement(using: &random)
                }
                do {
                    _ = try function.body(arguments)
                } catch let error as CouchetteError {
                    #expect(error.code == .invalidQuery, "\(name)\(arguments): \(error)")
                }
                calls += 1
            }
        }
        #expect(calls > 10_000)
    }

    /// Arithmetic on every pair of extreme integers: exact when it fits, else the double N1QL
    /// gives (or null when even that is not finite), never a trap.
    @Test func arithmeticOverflowBecomesADouble() {
        let extremes: [Int64] = [.min, .min + 1, -1, 0, 1, .max - 1, .max, 1 << 62, -(1 << 62), 3_037_000_500]
        for a in extremes {
            for b in extremes {
                for op in [Expression.BinaryOperator.add, .subtract, .multiply, .divide, .modulo] {
                    let result = Operators.arithmetic(op, .int(a), .int(b))
                    let exact: (Int64, Bool)? =
                        switch op {
                        case .add: a.addingReportingOverflow(b)
                        case .subtract: a.subtractingReportingOverflow(b)
                        case .multiply: a.multipliedReportingOverflow(by: b)
                        case .divide: b == 0 ? nil : a.dividedReportingOverflow(by: b)
                        default: b == 0 ? nil : a.remainderReportingOverflow(dividingBy: b)
                        }
                    switch (exact, result) {
                    case (nil, .null?): break
                    case ((let value, false)?, .int(let got)?): #expect(got == value, "\(a) \(op) \(b)")
                    case ((_, true)?, .double?), ((_, true)?, .int(0)?): break
                    default: Issue.record("\(a) \(op.rawValue) \(b) gave \(String(describing: result))")
                    }
                }
            }
        }
    }

    // MARK: - Revision ids from peers

    static func rev(_ generation: String, _ letter: Character = "a") -> String {
        generation + "-" + String(repeating: letter, count: 32)
    }

    @Test func revisionGenerationsAreParsedStrictly() {
        #expect(RevisionID.generation(of: Self.rev("1")) == 1)
        #expect(RevisionID.generation(of: Self.rev("4294967295")) == RevisionID.maximumGeneration)
        for bad in [
            "4294967296", "9223372036854775807", "99999999999999999999999", "0", "00", "+5", "-5", " 5", "5 ", "", "٣", "1e3", "0x10",
        ] {
            #expect(RevisionID.generation(of: Self.rev(bad)) == nil, "\(bad)")
        }
        // Seeded random prefixes: accepted exactly when they are decimal digits in 1...max.
        var random = ValueEncodingTests.SeededGenerator(seed: 0x15_03)
        let alphabet = Array("0123456789+- x٣")
        for _ in 0..<5_000 {
            let prefix = String((0..<Int.random(in: 0...12, using: &random)).map { _ in alphabet.randomElement(using: &random)! })
            let head = prefix.prefix { $0 != "-" }  // the generation ends at the first dash
            let digits = !head.isEmpty && head.count <= 10 && head.allSatisfy { $0.isASCII && $0.isNumber }
            let expected = digits ? Int(head).flatMap { (1...RevisionID.maximumGeneration).contains($0) ? $0 : nil } : nil
            #expect(RevisionID.generation(of: prefix + "-abc") == expected, "\(prefix)")
        }
    }

    @Test func peersCannotHandOverAGenerationThatWouldOverflow() async throws {
        try await withDatabase("db") { database, _ in
            let collection = try database.defaultCollection()
            let peer = try LocalPeer(collection: collection)
            let huge = Self.rev("9223372036854775807")
            let errors = try await peer.bulkDocs([
                PeerRevision(
                    id: "huge", revisionID: huge, deleted: false,
                    body: .dictionary(["v": .int(1)]), history: [huge])
            ])
            #expect(errors.map(\.error.code) == [.invalidParameter])
            #expect(try await collection.document(id: "huge") == nil)

            // The highest generation is accepted; editing past it is refused, not trapped.
            let highest = Self.rev("4294967295")
            #expect(
                try await peer.bulkDocs([
                    PeerRevision(
                        id: "top", revisionID: highest, deleted: false,
                        body: .dictionary(["v": .int(1)]), history: [highest])
                ]).isEmpty)
            let top = try #require(try await collection.document(id: "top")).toMutable()
            top.setValue(2, forKey: "v")
            let message = await expectCouchetteError(.invalidParameter) { try await collection.save(document: top) }
            #expect(message?.contains("cannot be edited further") == true, "\(message ?? "")")
            #expect(try await collection.document(id: "top")?.revisionID == highest)

            // Through the listener: a `_revisions.start` or `_rev` beyond the maximum is refused.
            try await withListener([collection]) { _, base in
                let body =
                    #"{"new_edits":false,"docs":[{"_id":"big","_rev":"\#(huge)","_revisions":{"start":9223372036854775807,"ids":["\#(String(repeating: "a", count: 32))"]}}]}"#
                let reply = try await httpRequest("POST", base + "/db/_bulk_docs", body: body)
                #expect(reply.text.contains("\"error\""), "\(reply.text)")
                let put = try await httpRequest("PUT", base + "/db/top", body: #"{"_rev":"\#(huge)","v":3}"#)
                #expect(put.status == 400, "\(put.text)")
            }
            #expect(try await collection.document(id: "big") == nil)
        }
    }
}
