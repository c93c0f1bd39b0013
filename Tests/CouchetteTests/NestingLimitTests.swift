import Foundation
import Testing

@testable import Couchette

/// Everything recursive over user-shaped input is bounded: SQL++ expressions by
/// ``Parser/maximumDepth`` (checked as the tree is built, before it could be too deep to compile,
/// evaluate or free), values by ``ValueEncoder/maximumDepth`` (JSON, stored bytes, Swift
/// containers). Inputs just under each limit work on the threads that run them (the cooperative
/// pool); inputs over it get a clear error instead of a stack overflow.
@Suite struct NestingLimitTests {
    static let depth = Parser.maximumDepth

    /// Runs `body` on a thread with the stack of the cooperative pool's threads (8 MB on Linux),
    /// which run queries and which every limit here must fit in; a thread of its own keeps the
    /// deep recursions here from holding a pool thread (see ``onAThreadOfItsOwn(_:)``).
    static func inTask<R: Sendable>(_ body: @escaping @Sendable () throws -> R) async throws -> R {
        try await onAThreadOfItsOwn { try body() }
    }

    static func value(_ database: Database, _ expression: String) throws -> String {
        let rows = try database.createQuery("SELECT \(expression) AS v FROM _ LIMIT 1").executeNow()
        return rows.map { $0.toJSON() }.first ?? "no row"
    }

    static func expectTooDeep(_ database: Database, _ sql: String, sourceLocation: SourceLocation = #_sourceLocation) async throws {
        let message = await expectCouchetteError(.invalidQuery, sourceLocation: sourceLocation) {
            _ = try await inTask { try database.createQuery(sql) }
        }
        #expect(message?.contains("deeper than \(depth) levels") == true, "\(message ?? "")", sourceLocation: sourceLocation)
    }

    static func seeded(_ database: Database) async throws {
        try await database.defaultCollection().save(document: MutableDocument(id: "one", data: ["a": 1, "list": [1, 2, 3]]))
    }

    @Test func theExamplesOfTheIssueAreRefused() async throws {
        try await withDatabase { database, _ in
            try await Self.seeded(database)
            try await Self.expectTooDeep(
                database,
                "SELECT " + String(repeating: "(", count: 10_000) + "1"
                    + String(repeating: ")", count: 10_000) + " FROM _")
            try await Self.expectTooDeep(database, "SELECT " + Array(repeating: "a", count: 30_000).joined(separator: " + ") + " FROM _")
            try await Self.expectTooDeep(database, "SELECT a FROM _ WHERE " + String(repeating: "NOT ", count: 20_000) + "a")
            try await Self.expectTooDeep(
                database, "SELECT a FROM _ WHERE " + Array(repeating: "a = 1", count: 9_000).joined(separator: " OR "))
            try await Self.expectTooDeep(database, "SELECT " + String(repeating: "- ", count: 50_000) + "a FROM _")
            try await Self.expectTooDeep(
                database, "SELECT " + String(repeating: "[", count: 10_000) + String(repeating: "]", count: 10_000) + " FROM _")
            try await Self.expectTooDeep(
                database, "SELECT " + String(repeating: "ABS(", count: 10_000) + "1" + String(repeating: ")", count: 10_000) + " FROM _")
            try await Self.expectTooDeep(database, "SELECT " + String(repeating: "EXISTS ", count: 10_000) + "a FROM _")
            try await Self.expectTooDeep(database, "SELECT a" + String(repeating: ".b", count: 10_000) + " FROM _")
            try await Self.expectTooDeep(database, "SELECT a" + String(repeating: "[0]", count: 10_000) + " FROM _")
        }
    }

    @Test func expressionsJustUnderTheLimitWork() async throws {
        try await withDatabase { database, _ in
            try await Self.seeded(database)
            let n = Self.depth
            // Heights: parentheses add none (n - 1 pairs around a leaf are still height 1, but
            // the parser recurses through each); a chain of k `+` is k + 1 high.
            let parens = String(repeating: "(", count: n - 1) + "a" + String(repeating: ")", count: n - 1)
            let sum = Array(repeating: "a", count: n).joined(separator: " + ")
            let nots = String(repeating: "NOT ", count: n - 1) + "a"
            let ors = Array(repeating: "a = 2", count: n - 2).joined(separator: " OR ") + " OR a = 1"  // `=` is a level
            let calls = String(repeating: "ABS(", count: n - 1) + "-1" + String(repeating: ")", count: n - 1)
            let values = try await Self.inTask {
                try [
                    Self.value(database, parens), Self.value(database, sum), Self.value(database, nots),
                    Self.value(database, ors), Self.value(database, calls),
                ]
            }
            #expect(values == [#"{"v":1}"#, #"{"v":\#(n)}"#, #"{"v":\#((n - 1) % 2 == 0)}"#, #"{"v":true}"#, #"{"v":1}"#])
            // One level more is refused, with the same message for every shape.
            try await Self.expectTooDeep(
                database, "SELECT " + String(repeating: "(", count: n) + "a" + String(repeating: ")", count: n) + " FROM _")
            try await Self.expectTooDeep(database, "SELECT " + Array(repeating: "a", count: n + 1).joined(separator: " + ") + " FROM _")
            try await Self.expectTooDeep(database, "SELECT " + String(repeating: "NOT ", count: n) + "a FROM _")
        }
    }

    /// Random expression trees (seeded): those within ``Parser/maximumDepth`` (levels of the
    /// tree, and of nesting in the text: parentheses and calls) compile and evaluate to what a
    /// direct computation gives; deeper ones are refused by name.
    @Test func randomTreesAreAcceptedExactlyUpToTheLimit() async throws {
        try await withDatabase { database, _ in
            try await Self.seeded(database)
            var random = ValueEncodingTests.SeededGenerator(seed: 15_002)
            var accepted = 0, refused = 0
            for _ in 0..<60 {
                let target = Int.random(in: Self.depth / 2...Self.depth + 40, using: &random)
                let tree = Self.randomTree(height: target, using: &random)
                // SELECT's expression is itself one level of nesting.
                if tree.height <= Self.depth && tree.nesting + 1 <= Self.depth {
                    let result = try await Self.inTask { try Self.value(database, tree.text) }
                    #expect(result == #"{"v":\#(tree.value)}"#, "height \(tree.height), nesting \(tree.nesting)")
                    accepted += 1
                } else {
                    try await Self.expectTooDeep(database, "SELECT \(tree.text) AS v FROM _")
                    refused += 1
                }
            }
            #expect(accepted > 5 && refused > 5)
        }
    }

    /// An integer expression over the document's `a` (= 1), `height` levels high unless
    /// parentheses (which add nesting but no level) are drawn, built from random operators,
    /// parentheses and calls.
    static func randomTree(height: Int, using random: inout ValueEncodingTests.SeededGenerator)
        -> (text: String, value: Int64, height: Int, nesting: Int)
    {
        if height <= 1 { return Bool.random(using: &random) ? ("a", 1, 1, 0) : ("2", 2, 1, 0) }
        let child = randomTree(height: height - 1, using: &random)
        switch Int.random(in: 0..<5, using: &random) {
        case 0: return ("(\(child.text) + 1)", child.value + 1, child.height + 1, child.nesting + 1)
        case 1: return ("(1 - \(child.text))", 1 - child.value, child.height + 1, child.nesting + 1)
        case 2: return ("ABS(\(child.text))", abs(child.value), child.height + 1, child.nesting + 1)
        // `-` on a literal folds into the literal (no level).
        case 3: return ("-(\(child.text))", -child.value, child.height == 1 ? 1 : child.height + 1, child.nesting + 1)
        default: return ("((\(child.text)))", child.value, child.height, child.nesting + 2)
        }
    }

    @Test func resultAliasesCannotMultiplyAQuery() async throws {
        try await withDatabase { database, _ in
            try await Self.seeded(database)
            // Each alias uses the previous one twice: 2^40 expressions once expanded.
            var items = ["a AS x0"]
            for level in 1...40 { items.append("x\(level - 1) + x\(level - 1) AS x\(level)") }
            let message = await expectCouchetteError(.invalidQuery) {
                _ = try database.createQuery("SELECT \(items.joined(separator: ", ")) FROM _")
            }
            #expect(message?.contains("query too large") == true || message?.contains("deeper than") == true, "\(message ?? "")")
            // A few levels are fine.
            let small = items.prefix(6).joined(separator: ", ")
            #expect(try await queryJSON(database, "SELECT \(small) FROM _") == [#"{"x0":1,"x1":2,"x2":4,"x3":8,"x4":16,"x5":32}"#])
        }
    }

    @Test func indexExpressionsAreBoundedToo() async throws {
        try await withDatabase { database, _ in
            let collection = try database.defaultCollection()
            let deep = Array(repeating: "a", count: 5_000).joined(separator: " + ")
            await expectCouchetteError(.invalidQuery) {
                try await collection.createIndex(withName: "deep", config: ValueIndexConfiguration([deep]))
            }
            await expectCouchetteError(.invalidQuery) {
                try await collection.createIndex(
                    withName: "deepWhere", config: ValueIndexConfiguration(["a"], where: String(repeating: "NOT ", count: 5_000) + "a"))
            }
        }
    }

    // MARK: - Values

    static func nestedJSON(_ depth: Int) -> String {
        String(repeating: "[", count: depth) + "1" + String(repeating: "]", count: depth)
    }

    @Test func jsonAndStorageShareOneDepthLimit() async throws {
        #expect(JSON.maximumDepth == ValueEncoder.maximumDepth)
        try await withDatabase { database, _ in
            let collection = try database.defaultCollection()
            // The deepest JSON that parses (the object, 510 arrays and the number at depth 511)
            // can be stored, read back and queried.
            let deepest = Self.nestedJSON(JSON.maximumDepth - 2)
            let document = try MutableDocument(id: "deep", json: #"{"v":\#(deepest)}"#)
            try await collection.save(document: document)
            let json = try await Self.inTask {
                try database.createQuery("SELECT v FROM _").executeNow().map { $0.toJSON() }
            }
            #expect(json == [#"{"v":\#(deepest)}"#])
            let read = try #require(try await collection.document(id: "deep"))
            #expect(read.toJSON() == #"{"v":\#(deepest)}"#)
            // Deeper JSON is refused by the parser, with the limit in the message.
            await expectCouchetteError(.invalidParameter) {
                _ = try MutableDocument(id: "deeper", json: #"{"v":\#(Self.nestedJSON(JSON.maximumDepth + 1))}"#)
            }
            // JSON far deeper than the stack could take is refused the same way.
            await expectCouchetteError(.invalidParameter) {
                _ = try MutableDocument(id: "deepest", json: Self.nestedJSON(1_000_000))
            }
        }
    }

    /// Bytes of `depth` nested one-element narrow arrays around the integer 5: what only a
    /// damaged file (or a hostile one) could hold beyond ``ValueEncoder/maximumDepth``.
    static func nestedEncoding(_ depth: Int) -> [UInt8] {
        var bytes: [UInt8] = []
        for level in 0..<depth {
            let size = 7 * (depth - level) + 2
            bytes += [ValueTag.narrowArray, UInt8(size & 0xFF), UInt8(size >> 8), 1, 0, 7, 0]
        }
        return bytes + [ValueTag.int8, 5]
    }

    static func nesting(_ value: Value) -> Int {
        var depth = 0
        var current = value
        while case .array(let elements) = current {
            depth += 1
            guard let first = elements.first else { break }
            current = first
        }
        return depth
    }

    @Test func storedBytesDeeperThanTheEncoderWritesAreCutOff() async throws {
        // Just under the limit: read in full.
        let fits = EncodedValue(bytes: Self.nestedEncoding(ValueEncoder.maximumDepth))
        let full = try await Self.inTask { fits.decode() }
        #expect(Self.nesting(full) == ValueEncoder.maximumDepth)
        #expect(try ValueEncoder.encode(full) == Self.nestedEncoding(ValueEncoder.maximumDepth))
        // Beyond it (9,000 levels: the 16-bit sizes allow that much): every recursive reader
        // stops at the limit, where containers read as empty.
        let damaged = EncodedValue(bytes: Self.nestedEncoding(9_000))
        let (decoded, plain, same, hashed) = try await Self.inTask {
            (
                damaged.decode(), ValueConversion.plain(damaged) is [Any],
                ValueOrder.compare(Datum(damaged), Datum(damaged)), HashKey(Datum(damaged)) == HashKey(Datum(damaged))
            )
        }
        // The containers at depths 0...511 hold their element; the one at 512 reads as empty.
        #expect(Self.nesting(decoded) == ValueEncoder.maximumDepth + 1)
        #expect(plain)
        #expect(same == 0)
        #expect(hashed)
    }

    @Test func swiftContainersDeeperThanTheLimitAreRefused() async throws {
        var nested: Any = 1
        for _ in 0..<(ValueEncoder.maximumDepth + 10) { nested = [nested] }
        let tooDeep = nested
        guard case .unsupported(let reason) = ValueConversion.convert(tooDeep) else {
            Issue.record("a container nested \(ValueEncoder.maximumDepth + 10) deep was converted")
            return
        }
        #expect(reason.contains("nested deeper than \(ValueEncoder.maximumDepth) levels"))
        try await withDatabase { database, _ in
            let document = MutableDocument(id: "x")
            document.setValue(tooDeep, forKey: "v")
            await expectCouchetteError(.invalidParameter) {
                try await database.defaultCollection().save(document: document)
            }
        }
    }
}
