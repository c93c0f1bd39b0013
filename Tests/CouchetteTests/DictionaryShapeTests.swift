import Foundation
import Testing

@testable import Couchette

/// `toDictionary()` maps the values of a kept dictionary when a thread meets a key set again
/// (``DictionaryShapes``): every result must equal the decoded body, whichever key sets came
/// before it on that thread.
@Suite(.tags(.sanitizeAddress, .concurrency)) struct DictionaryShapeTests {
    /// The body as `[String: Any]`, checked against its decoded `Value` (an independent walk); a
    /// body that is no dictionary (a damaged tag) converts to an empty one.
    private static func expectPlainEqualsDecoded(_ body: [UInt8], _ comment: Comment? = nil) throws {
        let document = Document(id: "d", revisionID: nil, sequence: 0, body: body)
        let plain = document.toDictionary()
        let decoded = document.root.decode()
        guard case .dictionary = decoded else {
            #expect(plain.isEmpty, comment)
            return
        }
        #expect(ReadOwnershipTests.same(try ValueConversion.strict(plain), decoded), comment)
    }

    private static func person(_ number: Int) -> Value {
        .dictionary([
            "name": .dictionary(["first": .string("Ann \(number)"), "last": .string("Lee")]),
            "age": .int(Int64(number)),
            "contact": .dictionary([
                "address": .dictionary(["city": .string("city \(number)"), "zip": .string(String(number))]),
                "email": .array([.string("ann\(number)@example.com")]),
            ]),
            "score": .double(Double(number) / 4), "active": .bool(number % 2 == 0), "note": number % 3 == 0 ? .null : .string("n"),
        ])
    }

    @Test func documentsOfOneShapeConvertToTheirOwnValues() throws {
        for number in 0..<50 {
            let body = try ValueEncoder.encode(Self.person(number))
            try Self.expectPlainEqualsDecoded(body, "document \(number)")
            let plain = Document(id: "d", revisionID: nil, sequence: 0, body: body).toDictionary()
            #expect((plain["name"] as? [String: Any])?["first"] as? String == "Ann \(number)")
            #expect(plain["age"] as? Int == number)
        }
    }

    /// Key sets of equal counts and key lengths, differing in one byte (also past the first eight),
    /// converted in turn many times: none shows another's keys.
    @Test func keySetsThatDifferInOneByteStayApart() throws {
        let keySets: [[String]] = [
            ["ab", "cd"], ["ab", "ce"], ["ab", "cf"],
            ["abcdefgh1", "x"], ["abcdefgh2", "x"], ["abcdefgh1", "y"],
            ["", "a"], ["é", "a"], ["\u{1F600}", "a"],
        ]
        for round in 0..<6 {
            for (set, keys) in keySets.enumerated() {
                let value = Value.dictionary(
                    Dictionary(uniqueKeysWithValues: keys.enumerated().map { ($1, .int(Int64(round * 100 + set * 10 + $0))) }))
                let body = try ValueEncoder.encode(value)
                let plain = Document(id: "d", revisionID: nil, sequence: 0, body: body).toDictionary()
                #expect(Set(plain.keys) == Set(keys), "round \(round), set \(set)")
                try Self.expectPlainEqualsDecoded(body, "round \(round), set \(set)")
            }
        }
    }

    /// The limits: the most keys a kept shape holds and one more, long (heap) keys, and nesting
    /// past the depth the shape walk covers.
    @Test func largeLongAndDeepDictionariesConvertTheSame() throws {
        for count in [DictionaryShapes.maximumKeys, DictionaryShapes.maximumKeys + 1] {
            let value = Value.dictionary(
                Dictionary(uniqueKeysWithValues: (0..<count).map { ("key \($0) " + String(repeating: "k", count: $0), .int(Int64($0))) }))
            let body = try ValueEncoder.encode(value)
            for _ in 0..<3 { try Self.expectPlainEqualsDecoded(body, "\(count) keys") }
        }
        var nested = Value.dictionary(["leaf": .string("bottom"), "n": .int(0)])
        for level in 1...(DictionaryShapes.maximumDepth + 4) {
            nested = .dictionary(["child": nested, "n": .int(Int64(level))])
        }
        let deep = try ValueEncoder.encode(nested)
        for _ in 0..<3 { try Self.expectPlainEqualsDecoded(deep, "deep") }
    }

    /// A key stored twice (hand-made bytes; the encoder never writes it): the later entry's value
    /// wins, whether the shape is new or kept.
    @Test func aKeyStoredTwiceKeepsTheLaterValue() throws {
        var bytes = try ValueEncoder.encode(.dictionary(["a": .int(1), "b": .int(2)]))
        let second = try #require(bytes.lastIndex(of: UInt8(ascii: "b")))
        bytes[second] = UInt8(ascii: "a")
        for _ in 0..<3 {
            let plain = Document(id: "d", revisionID: nil, sequence: 0, body: bytes).toDictionary()
            #expect(plain.count == 1 && plain["a"] as? Int == 2)
            try Self.expectPlainEqualsDecoded(bytes)
        }
    }

    /// Damaged copies of one body, each converted a few times after the intact one: entries the
    /// walk leaves out change the key set, never borrow the intact one's keys.
    @Test func damagedBodiesAfterTheIntactOneConvertTheSame() throws {
        let intact = try ValueEncoder.encode(Self.person(7))
        var random = SystemRandomNumberGenerator()
        for trial in 0..<200 {
            for _ in 0..<2 { try Self.expectPlainEqualsDecoded(intact) }
            var damaged = intact
            damaged[Int.random(in: 0..<damaged.count, using: &random)] = UInt8.random(in: 0...255, using: &random)
            for _ in 0..<2 { try Self.expectPlainEqualsDecoded(damaged, "trial \(trial): \(damaged)") }
        }
    }

    /// Tasks converting different shapes at once, each thread keeping its own cache (run under
    /// ThreadSanitizer in CI), and documents read from a database whose file is then closed.
    @Test func concurrentReadersConvertTheirOwnShapes() async throws {
        try await withDatabase { database, _ in
            let collection = try database.defaultCollection()
            try await database.inBatch { batch in
                for number in 0..<40 {
                    let document = MutableDocument(id: "p\(number)")
                    document.setValue(ValueConversion.plain(Self.person(number)), forKey: "person")
                    document.setInt(number, forKey: "n")
                    if number % 2 == 0 { document.setString("even", forKey: "kind") }
                    try batch.save(document: document, in: collection)
                }
            }
            try await withThrowingTaskGroup(of: Void.self) { group in
                for reader in 0..<4 {
                    group.addTask {
                        for round in 0..<5 {
                            for number in stride(from: reader, to: 40, by: 4) {
                                let document = try #require(try await collection.document(id: "p\(number)"))
                                let plain = document.toDictionary()
                                #expect(try ValueConversion.strict(plain) == document.root.decode(), "round \(round)")
                                #expect(plain["n"] as? Int == number && (plain["kind"] != nil) == (number % 2 == 0))
                            }
                        }
                    }
                }
                try await group.waitForAll()
            }
        }
    }

    /// A thread that converted dictionaries and ended released its cache (AddressSanitizer's leak
    /// check in CI), and the next thread starts with its own.
    @Test func threadsThatEndReleaseTheirCache() async throws {
        let body = try ValueEncoder.encode(Self.person(3))
        for _ in 0..<3 {
            let same = await withCheckedContinuation { (finished: CheckedContinuation<Bool, Never>) in
                Thread {
                    let document = Document(id: "d", revisionID: nil, sequence: 0, body: body)
                    finished.resume(
                        returning: (0..<3).allSatisfy { _ in
                            (try? ValueConversion.strict(document.toDictionary())) == document.root.decode()
                        })
                }.start()
            }
            #expect(same)
        }
    }
}
