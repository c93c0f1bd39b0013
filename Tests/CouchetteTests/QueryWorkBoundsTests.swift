import Foundation
import Testing

@testable import Couchette

/// No query works without bound: LIKE matches in polynomial time, regular expressions stop at
/// ``FunctionLibrary/regexTimeLimit``, a cancelled query stops at its next row, and closing the
/// database stops the queries running on it instead of waiting for them forever.
///
/// Serialized: a running query occupies its thread, and the cooperative pool may have only two;
/// two endless queries at once would leave no thread for the test that stops them.
@Suite(.serialized) struct QueryWorkBoundsTests {
    @Test func likeWithManyWildcardsIsFast() async throws {
        try await withDatabase { database, _ in
            let text = String(repeating: "a", count: 200)
            try await database.defaultCollection().save(document: MutableDocument(id: "s", data: ["s": text, "u": text + "é"]))
            let pattern = String(repeating: "%a", count: 11) + "%b"
            let start = ContinuousClock.now
            #expect(
                try await queryJSON(
                    database,
                    "SELECT s LIKE '\(pattern)' AS ascii, u LIKE '\(pattern)' AS unicode, s LIKE '\(String(repeating: "%a", count: 11))%' AS yes FROM _"
                )
                    == [#"{"ascii":false,"unicode":false,"yes":true}"#])
            let long = String(repeating: "a", count: 20_000)
            #expect(!LikePattern.matches(long, String(repeating: "%a", count: 500) + "%b", .binary))
            #expect(LikePattern.matches(long, String(repeating: "%a", count: 500) + "%", .binary))
            #expect(ContinuousClock.now - start < .seconds(5))
        }
    }

    /// LIKE against a regular expression doing the same (`%` is `.*`, `_` is `.`, backslash
    /// escapes), over seeded random short strings and patterns: ASCII (the byte path),
    /// non-ASCII (the Character path), and a collation that folds case.
    @Test func likeAgreesWithARegularExpressionOnRandomInputs() throws {
        var random = ValueEncodingTests.SeededGenerator(seed: 0x15_0C)
        let textAlphabet: [Character] = ["a", "b", "%", "_", "\\", "é"]
        let patternAlphabet: [Character] = ["a", "b", "%", "%", "_", "\\", "é"]
        for _ in 0..<4_000 {
            let text = String((0..<Int.random(in: 0...10, using: &random)).map { _ in textAlphabet.randomElement(using: &random)! })
            let pattern = String((0..<Int.random(in: 0...8, using: &random)).map { _ in patternAlphabet.randomElement(using: &random)! })
            let expected = try Self.referenceMatch(text, pattern)
            #expect(LikePattern.matches(text, pattern, .binary) == expected, "'\(text)' LIKE '\(pattern)'")
            #expect(LikePattern.characterMatch(text, pattern, .binary) == expected, "'\(text)' LIKE '\(pattern)' (characters)")
            var nocase = Collation()
            _ = nocase.apply("NOCASE")
            let upper = String(text.map { $0 == "a" ? "A" : $0 == "b" ? "B" : $0 })  // NOCASE folds ASCII only
            #expect(LikePattern.matches(upper, pattern, nocase) == expected, "'\(upper)' LIKE '\(pattern)' NOCASE")
        }
    }

    static func referenceMatch(_ text: String, _ pattern: String) throws -> Bool {
        var regex = "^"
        var characters = pattern[...]
        while let character = characters.popFirst() {
            switch character {
            case "%": regex += ".*"
            case "_": regex += "."
            case "\\" where !characters.isEmpty: regex += NSRegularExpression.escapedPattern(for: String(characters.removeFirst()))
            default: regex += NSRegularExpression.escapedPattern(for: String(character))
            }
        }
        let expression = try NSRegularExpression(pattern: regex + "$", options: [.dotMatchesLineSeparators])
        return expression.firstMatch(in: text, range: NSRange(text.startIndex..., in: text)) != nil
    }

    @Test func catastrophicRegularExpressionsStopAtTheTimeLimit() async throws {
        try await withDatabase { database, _ in
            try await database.defaultCollection().save(document: MutableDocument(id: "s", data: ["s": String(repeating: "a", count: 40)]))
            // 2^40 ways to split the run of `a`s, each tried before giving up.
            // A whole-string match ends either at our time limit or, sooner, at ICU's own
            // backtracking-stack limit, where ICU answers "no match" (right here: there is no b).
            let start = ContinuousClock.now
            do {
                #expect(try await queryJSON(database, "SELECT REGEXP_LIKE(s, '(a+)+b') AS v FROM _") == [#"{"v":false}"#])
            } catch let error as CouchetteError {
                #expect(error.code == .invalidQuery && error.message.contains("took longer than"), "\(error)")
            }
            #expect(ContinuousClock.now - start < FunctionLibrary.regexTimeLimit * 4, "REGEXP_LIKE")
            for function in ["REGEXP_CONTAINS(s, '(a+)+b')", "REGEXP_POSITION(s, '(a+)+b')", "REGEXP_REPLACE(s, '(a+)+b', 'x')"] {
                let start = ContinuousClock.now
                let message = await expectCouchetteError(.invalidQuery) {
                    _ = try await queryJSON(database, "SELECT \(function) AS v FROM _")
                }
                #expect(message?.contains("took longer than") == true, "\(function): \(message ?? "")")
                #expect(ContinuousClock.now - start < FunctionLibrary.regexTimeLimit * 4, "\(function)")
            }
            // Ordinary expressions are unaffected.
            #expect(try await queryJSON(database, "SELECT REGEXP_LIKE(s, 'a+') AS v FROM _") == [#"{"v":true}"#])
            #expect(try await queryJSON(database, "SELECT REGEXP_POSITION(s, 'a{3}$') AS v FROM _") == [#"{"v":37}"#])
        }
    }

    /// A query over 600³ rows (far longer than any test may wait), for the tests below.
    static func endlessQuery(_ database: Database) async throws -> Query {
        let collection = try database.defaultCollection()
        try await database.inBatch { batch in
            for number in 0..<600 { try batch.save(document: MutableDocument(id: "d\(number)", data: ["n": number]), in: collection) }
        }
        return try database.createQuery("SELECT COUNT(*) AS c FROM _ AS a CROSS JOIN _ AS b CROSS JOIN _ AS c WHERE a.n + b.n + c.n < 0")
    }

    @Test func closingTheDatabaseStopsARunningQuery() async throws {
        let directory = try TemporaryDirectory()
        let database = try directory.open()
        let query = try await Self.endlessQuery(database)
        // On a thread of its own, as an app's background thread would run it.
        let outcome = Locked<Result<Int, any Error>?>(nil)
        let thread = Thread {
            let result = Result { try query.executeNow().allResults().count }
            outcome.withLock { $0 = result }
        }
        thread.start()
        try await Task.sleep(for: .milliseconds(300))
        #expect(outcome.withLock { $0 == nil }, "the query should still be running")
        let start = ContinuousClock.now
        try await database.close()
        #expect(ContinuousClock.now - start < .seconds(5))
        #expect(await eventually { outcome.withLock { $0 != nil } })
        await expectCouchetteError(.notOpen) { _ = try outcome.withLock { $0 }?.get() }
        // The files are free again: the database opens and answers at once.
        let reopened = try directory.open()
        #expect(try await queryJSON(reopened, "SELECT COUNT(*) AS c FROM _") == [#"{"c":600}"#])
        try await reopened.close()
    }

    @Test func aCancelledQueryStopsPromptly() async throws {
        try await withDatabase { database, _ in
            let query = try await Self.endlessQuery(database)
            let running = Task { try await query.execute() }
            try await Task.sleep(for: .milliseconds(300))
            let start = ContinuousClock.now
            running.cancel()
            do {
                _ = try await running.value
                Issue.record("a cancelled query ran to its end")
            } catch {
                #expect(error is CancellationError, "\(error)")
            }
            #expect(ContinuousClock.now - start < .seconds(5))
            // The database is still fine for the next query.
            #expect(try await queryJSON(database, "SELECT COUNT(*) AS c FROM _") == [#"{"c":600}"#])
        }
    }
}
