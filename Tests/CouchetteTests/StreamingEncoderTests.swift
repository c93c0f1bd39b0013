import Foundation
import Testing

@testable import Couchette

/// The streaming document encoder (`BodyStream`) against the buffered one (`ModelEncoder`): the
/// same bytes, or the same error, for every model shape — including models that use their
/// containers out of order, which the stream hands to the buffered encoder.
@Suite struct StreamingEncoderTests {
    // MARK: - Models of the other suites

    @Test func theModelsOfTheOtherSuitesStreamToTheBufferedBytes() throws {
        let person = Person(
            id: "p-1", name: "Ann", contacts: [Contact(id: "c-1", name: "Bo", email: "bo@example.com"), Contact(name: "Cy")],
            best: Contact(name: "Di"), byRole: ["boss": Contact(name: "Ed"), "peer": Contact(id: "c-9", name: "Flo")])
        let dog = Dog(name: "Rex", breed: "collie")
        dog.id = "dog-1"
        let cat = Cat(name: "Tom", lives: 9)
        try expectSameBody(EveryType())
        try expectSameBody(person)
        try expectSameBody(dog)
        try expectSameBody(cat)
        try expectSameBody(TodoTask(title: "t", completed: nil))
        try expectSameBody(Checklist(name: "groceries", items: ["milk", "eggs"]))
        try expectSameBody(NoIDModel())
        // The superclass's @DocumentID under "super" is still the document's id.
        #expect(try DocumentEncoder.encode(dog).documentIDs.count == 1)
    }

    @Test func aModelWithKeysInDeclarationOrderIsStoredSortedWithoutTheFallback() throws {
        let task = TodoTask(title: "write", completed: false)
        let streamed = try #require(try streamedBody(task))
        #expect(EncodedValue(bytes: streamed).decode() == .dictionary(["title": .string("write"), "completed": .bool(false)]))
        #expect(streamed == (try DocumentEncoder.encodeBuffered(task, blobs: nil, revisionPosition: { nil })).body)
    }

    // MARK: - Containers out of order

    @Test func aNestedContainerWrittenAfterItsParentMovedOnFallsBackToTheSameBytes() throws {
        struct Revisiting: Encodable {
            enum Keys: String, CodingKey { case inner, after, list }
            enum InnerKeys: String, CodingKey { case x, y }
            func encode(to encoder: any Encoder) throws {
                var container = encoder.container(keyedBy: Keys.self)
                var inner = container.nestedContainer(keyedBy: InnerKeys.self, forKey: .inner)
                var list = container.nestedUnkeyedContainer(forKey: .list)
                try inner.encode(1, forKey: .x)
                try container.encode("a", forKey: .after)
                try list.encode(true)
                try inner.encode(2, forKey: .y)
            }
        }
        #expect(try streamedBody(Revisiting()) == nil)
        let body = try expectSameBody(Revisiting())
        #expect(
            EncodedValue(bytes: body).decode()
                == .dictionary(["inner": .dictionary(["x": .int(1), "y": .int(2)]), "after": .string("a"), "list": .array([.bool(true)])]))
    }

    @Test func aSuperEncoderUsedLateOrNeverMatchesTheBufferedEncoder() throws {
        struct LateSuper: Encodable {
            let useLate: Bool
            enum Keys: String, CodingKey { case a, b, parent }
            func encode(to encoder: any Encoder) throws {
                var container = encoder.container(keyedBy: Keys.self)
                let parent = container.superEncoder(forKey: .parent)
                let unused = container.superEncoder()
                _ = unused
                try container.encode(1, forKey: .a)
                if useLate {
                    var single = parent.singleValueContainer()
                    try single.encode("late")
                }
                try container.encode(2, forKey: .b)
            }
        }
        #expect(try streamedBody(LateSuper(useLate: false)) != nil)
        let unusedBody = try expectSameBody(LateSuper(useLate: false))
        #expect(
            EncodedValue(bytes: unusedBody).decode()
                == .dictionary(["a": .int(1), "b": .int(2), "parent": .dictionary([:]), "super": .dictionary([:])]))
        #expect(try streamedBody(LateSuper(useLate: true)) == nil)
        try expectSameBody(LateSuper(useLate: true))
    }

    @Test func aKeyWrittenTwiceKeepsItsLastValue() throws {
        struct Twice: Encodable {
            enum Keys: String, CodingKey { case b, a }
            func encode(to encoder: any Encoder) throws {
                var container = encoder.container(keyedBy: Keys.self)
                try container.encode("first", forKey: .b)
                try container.encode(1, forKey: .a)
                var nested = container.nestedUnkeyedContainer(forKey: .b)
                try nested.encode(2)
            }
        }
        let body = try #require(try streamedBody(Twice()))
        #expect(EncodedValue(bytes: body).decode() == .dictionary(["a": .int(1), "b": .array([.int(2)])]))
        try expectSameBody(Twice())
    }

    @Test func aModelWritingToAnOuterContainerWhileNestedFallsBack() throws {
        final class Sneaky: Encodable {
            enum Keys: String, CodingKey { case child, k }
            func encode(to encoder: any Encoder) throws {
                var container = encoder.container(keyedBy: Keys.self)
                try container.encode(Child(parent: container), forKey: .child)
            }
            struct Child: Encodable {
                var parent: KeyedEncodingContainer<Keys>
                func encode(to encoder: any Encoder) throws {
                    var single = encoder.singleValueContainer()
                    try single.encode(5)
                    var outer = parent
                    try outer.encode("from the child", forKey: .child)
                }
            }
        }
        #expect(try streamedBody(Sneaky()) == nil)
        let body = try expectSameBody(Sneaky())
        #expect(EncodedValue(bytes: body).decode() == .dictionary(["child": .int(5)]))
    }

    // MARK: - Sizes and keys

    @Test func wideContainersLongKeysAndUnicodeKeysMatch() throws {
        struct Wide: Encodable {
            func encode(to encoder: any Encoder) throws {
                var container = encoder.container(keyedBy: CodingPath.NamedKey.self)
                try container.encode((0..<9_000).map { "element \($0)" }, forKey: .init("many"))
                try container.encode(String(repeating: "é", count: 200), forKey: .init(String(repeating: "k", count: 300)))
                for key in ["z", "é", "e", "ÿ", "Z", "", "✓", "a\u{0}b", "10", "9"] { try container.encode(key, forKey: .init(key)) }
                var big = container.nestedContainer(keyedBy: CodingPath.NamedKey.self, forKey: .init("big"))
                for number in (0..<3_000).reversed() { try big.encode(number, forKey: .init("key \(number)")) }
            }
        }
        #expect(try streamedBody(Wide()) != nil)
        try expectSameBody(Wide())
        // A Swift dictionary arrives in hash order.
        try expectSameBody(Keyed(values: Dictionary(uniqueKeysWithValues: (0..<500).map { ("k\($0 * 7919 % 500)", $0) })))
    }

    // MARK: - Errors

    @Test func errorsAreTheBufferedEncodersErrors() throws {
        struct NaNInside: Encodable {
            enum Keys: String, CodingKey { case b, a }
            func encode(to encoder: any Encoder) throws {
                var container = encoder.container(keyedBy: Keys.self)
                try container.encode(Double.nan, forKey: .b)
                try container.encode([1.0, .infinity], forKey: .a)
            }
        }
        struct SingleRoot: Encodable {
            func encode(to encoder: any Encoder) throws {
                var single = encoder.singleValueContainer()
                try single.encode(Keyed(values: ["a": 1]))
            }
        }
        struct TwoValues: Encodable {
            func encode(to encoder: any Encoder) throws {
                var container = encoder.container(keyedBy: CodingPath.NamedKey.self)
                try container.encode(TwoSingles(), forKey: .init("x"))
            }
        }
        struct TwoSingles: Encodable {
            func encode(to encoder: any Encoder) throws {
                var single = encoder.singleValueContainer()
                try single.encode(1)
                try single.encode(2)
            }
        }
        struct WithData: Encodable {
            var first = "ok"
            var data = Data([1, 2])
        }
        struct FarDate: Encodable {
            var name = "x"
            var when = [Date(timeIntervalSince1970: 1e20)]
        }
        struct Caught: Encodable {
            enum Keys: String, CodingKey { case a, b }
            func encode(to encoder: any Encoder) throws {
                var container = encoder.container(keyedBy: Keys.self)
                try? container.encode(Data([1]), forKey: .a)  // the model swallows the error: no half entry may stay
                try container.encode(2, forKey: .b)
            }
        }
        try expectSameResult(NaNInside())
        try expectSameResult(SingleRoot())
        try expectSameResult(TwoValues())
        try expectSameResult(WithData())
        try expectSameResult(FarDate())
        try expectSameResult(Caught())
        let error = try #require(throws: CouchetteError.self) { _ = try DocumentEncoder.encode(NaNInside()) }
        #expect(error.message.contains("value at 'a[1]' cannot be stored"))
    }

    // MARK: - Random shapes

    @Test func randomModelShapesEncodeAsTheBufferedEncoderDoes() throws {
        var generator = ValueEncodingTests.SeededGenerator(seed: 2026)
        var streamed = 0
        for round in 0..<600 {
            let interleave = round % 3 == 0
            let model = ScriptedModel(
                script: .keyed(randomEntries(depth: 0, interleave: interleave, using: &generator), interleaved: interleave))
            try expectSameResult(model)
            if !interleave && !model.script.hasNonFinite {
                #expect(try streamedBody(model) != nil, "round \(round): an in-order model fell back")
                streamed += 1
            }
        }
        #expect(streamed > 300)
    }

    // MARK: - Helpers

    /// The body the stream writes, or nil when it hands the model to the buffered encoder.
    private func streamedBody<T: Encodable>(_ model: T) throws -> [UInt8]? {
        try DocumentEncoder.streamedBody(model, context: EncodingContext(blobs: nil, revisionPosition: { nil }))
    }

    @discardableResult
    private func expectSameBody<T: Encodable>(_ model: T, sourceLocation: SourceLocation = #_sourceLocation) throws -> [UInt8] {
        let streamed = try DocumentEncoder.encode(model)
        let buffered = try DocumentEncoder.encodeBuffered(model, blobs: nil, revisionPosition: { nil })
        #expect(streamed.body == buffered.body, sourceLocation: sourceLocation)
        #expect(
            streamed.documentIDs.map(ObjectIdentifier.init) == buffered.documentIDs.map(ObjectIdentifier.init),
            sourceLocation: sourceLocation)
        return streamed.body
    }

    private func expectSameResult<T: Encodable>(_ model: T, sourceLocation: SourceLocation = #_sourceLocation) throws {
        func outcome(_ encode: () throws -> DocumentEncoder.Output) -> Result<[UInt8], CouchetteError> {
            do {
                return .success(try encode().body)
            } catch let error as CouchetteError {
                return .failure(error)
            } catch {
                return .failure(CouchetteError(.unsupported, "not a CouchetteError: \(error)"))
            }
        }
        let streamed = outcome { try DocumentEncoder.encode(model) }
        let buffered = outcome { try DocumentEncoder.encodeBuffered(model, blobs: nil, revisionPosition: { nil }) }
        switch (streamed, buffered) {
        case (.success(let a), .success(let b)): #expect(a == b, sourceLocation: sourceLocation)
        case (.failure(let a), .failure(let b)):
            #expect(a.code == b.code, sourceLocation: sourceLocation)
            #expect(a.message == b.message, sourceLocation: sourceLocation)
        default: Issue.record("streamed \(streamed), buffered \(buffered)", sourceLocation: sourceLocation)
        }
    }

    private func randomEntries(
        depth: Int, interleave: Bool, using generator: inout ValueEncodingTests.SeededGenerator
    ) -> [(String, Script)] {
        let keys = ["id", "name", "b", "a", "zeta", "ä", "title", "x", String(repeating: "long", count: 40)]
        return (0..<Int.random(in: 0...6, using: &generator)).map { _ in
            (
                keys[Int.random(in: 0..<keys.count, using: &generator)],
                randomScript(depth: depth + 1, interleave: interleave, using: &generator)
            )
        }
    }

    private func randomScript(depth: Int, interleave: Bool, using generator: inout ValueEncodingTests.SeededGenerator) -> Script {
        let choice = Int.random(in: 0..<(depth > 4 ? 9 : 14), using: &generator)
        switch choice {
        case 0: return .string(["", "héllo", "a longer string with some words in it"][Int.random(in: 0..<3, using: &generator)])
        case 1: return .int(Int.random(in: -70_000...70_000, using: &generator))
        case 2: return .double([1.5, -0.0, 1e300, .nan, 3][Int.random(in: 0..<5, using: &generator)])
        case 3: return .bool(Bool.random(using: &generator))
        case 4: return .null
        case 5: return .date(Date(timeIntervalSince1970: Double(Int.random(in: 0...2_000_000_000, using: &generator)) / 1000))
        case 6: return .strings((0..<Int.random(in: 0...4, using: &generator)).map { "s\($0)" })
        case 7: return .uint64(UInt64.random(in: UInt64(Int64.max) - 2...UInt64(Int64.max) + 2, using: &generator))
        case 8: return .optionalNil
        case 9, 10:
            return .keyed(
                randomEntries(depth: depth, interleave: interleave, using: &generator),
                interleaved: interleave && Bool.random(using: &generator))
        case 11:
            let elements = (0..<Int.random(in: 0...4, using: &generator)).map { _ in
                randomScript(depth: depth + 1, interleave: interleave, using: &generator)
            }
            return .unkeyed(elements, interleaved: interleave && Bool.random(using: &generator))
        case 12: return .model(randomScript(depth: depth + 1, interleave: interleave, using: &generator))
        default: return .superValue(randomScript(depth: depth + 1, interleave: interleave, using: &generator))
        }
    }
}

/// A dictionary model encoded through a Swift dictionary (keys in hash order).
private struct Keyed: Encodable {
    var values: [String: Int]
    func encode(to encoder: any Encoder) throws { try values.encode(to: encoder) }
}

/// What a ``ScriptedModel`` encodes, and how.
private indirect enum Script {
    case string(String), int(Int), double(Double), bool(Bool), null, date(Date), strings([String]), uint64(UInt64), optionalNil
    /// A keyed container: entries in order, or (interleaved) every nested container opened first
    /// and filled afterwards, last first.
    case keyed([(String, Script)], interleaved: Bool)
    case unkeyed([Script], interleaved: Bool)
    /// A value with its own `encode(to:)`.
    case model(Script)
    /// Encoded through a super-encoder (in a keyed container, under its key).
    case superValue(Script)

    var hasNonFinite: Bool {
        switch self {
        case .double(let number): !number.isFinite
        case .keyed(let entries, _): entries.contains { $0.1.hasNonFinite }
        case .unkeyed(let elements, _): elements.contains(where: \.hasNonFinite)
        case .model(let inner), .superValue(let inner): inner.hasNonFinite
        default: false
        }
    }
}

private struct ScriptedModel: Encodable {
    let script: Script

    func encode(to encoder: any Encoder) throws {
        switch script {
        case .keyed(let entries, let interleaved):
            var container = encoder.container(keyedBy: CodingPath.NamedKey.self)
            try Self.fill(&container, entries, interleaved: interleaved)
        case .unkeyed(let elements, let interleaved):
            var container = encoder.unkeyedContainer()
            try Self.fill(&container, elements, interleaved: interleaved)
        case .superValue(let inner), .model(let inner):
            try ScriptedModel(script: inner).encode(to: encoder)
        case .string(let text): try encodeSingle(text, encoder)
        case .int(let number): try encodeSingle(number, encoder)
        case .double(let number): try encodeSingle(number, encoder)
        case .bool(let flag): try encodeSingle(flag, encoder)
        case .null:
            var single = encoder.singleValueContainer()
            try single.encodeNil()
        case .date(let date): try encodeSingle(date, encoder)
        case .strings(let strings): try encodeSingle(strings, encoder)
        case .uint64(let number): try encodeSingle(number, encoder)
        case .optionalNil: try encodeSingle(String?.none, encoder)
        }
    }

    private func encodeSingle<T: Encodable>(_ value: T, _ encoder: any Encoder) throws {
        var single = encoder.singleValueContainer()
        try single.encode(value)
    }

    static func fill(_ container: inout KeyedEncodingContainer<CodingPath.NamedKey>, _ entries: [(String, Script)], interleaved: Bool)
        throws
    {
        var later: [() throws -> Void] = []
        for (name, script) in entries {
            let key = CodingPath.NamedKey(name)
            switch script {
            case .keyed(let inner, let nestedInterleaved):
                var nested = container.nestedContainer(keyedBy: CodingPath.NamedKey.self, forKey: key)
                if interleaved {
                    later.append { try fill(&nested, inner, interleaved: nestedInterleaved) }
                } else {
                    try fill(&nested, inner, interleaved: nestedInterleaved)
                }
            case .unkeyed(let inner, let nestedInterleaved):
                var nested = container.nestedUnkeyedContainer(forKey: key)
                if interleaved {
                    later.append { try fill(&nested, inner, interleaved: nestedInterleaved) }
                } else {
                    try fill(&nested, inner, interleaved: nestedInterleaved)
                }
            case .superValue(let inner):
                let encoder = container.superEncoder(forKey: key)
                if interleaved {
                    later.append { try ScriptedModel(script: inner).encode(to: encoder) }
                } else {
                    try ScriptedModel(script: inner).encode(to: encoder)
                }
            case .string(let text): try container.encode(text, forKey: key)
            case .int(let number): try container.encode(number, forKey: key)
            case .double(let number): try container.encode(number, forKey: key)
            case .bool(let flag): try container.encode(flag, forKey: key)
            case .null: try container.encodeNil(forKey: key)
            case .date(let date): try container.encode(date, forKey: key)
            case .strings(let strings): try container.encode(strings, forKey: key)
            case .uint64(let number): try container.encode(number, forKey: key)
            case .optionalNil: try container.encodeIfPresent(String?.none, forKey: key)
            case .model(let inner): try container.encode(ScriptedModel(script: inner), forKey: key)
            }
        }
        for step in later.reversed() { try step() }
    }

    static func fill(_ container: inout any UnkeyedEncodingContainer, _ elements: [Script], interleaved: Bool) throws {
        var later: [() throws -> Void] = []
        for script in elements {
            switch script {
            case .keyed(let inner, let nestedInterleaved):
                var nested = container.nestedContainer(keyedBy: CodingPath.NamedKey.self)
                if interleaved {
                    later.append { try fill(&nested, inner, interleaved: nestedInterleaved) }
                } else {
                    try fill(&nested, inner, interleaved: nestedInterleaved)
                }
            case .unkeyed(let inner, let nestedInterleaved):
                var nested = container.nestedUnkeyedContainer()
                if interleaved {
                    later.append { try fill(&nested, inner, interleaved: nestedInterleaved) }
                } else {
                    try fill(&nested, inner, interleaved: nestedInterleaved)
                }
            case .superValue(let inner):
                let encoder = container.superEncoder()
                if interleaved {
                    later.append { try ScriptedModel(script: inner).encode(to: encoder) }
                } else {
                    try ScriptedModel(script: inner).encode(to: encoder)
                }
            case .string(let text): try container.encode(text)
            case .int(let number): try container.encode(number)
            case .double(let number): try container.encode(number)
            case .bool(let flag): try container.encode(flag)
            case .null: try container.encodeNil()
            case .date(let date): try container.encode(date)
            case .strings(let strings): try container.encode(strings)
            case .uint64(let number): try container.encode(number)
            case .optionalNil: try container.encode(String?.none)
            case .model(let inner): try container.encode(ScriptedModel(script: inner))
            }
        }
        for step in later.reversed() { try step() }
    }
}
