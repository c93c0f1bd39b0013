import Foundation
import Testing

@testable import Couchette

/// Editing a document read from storage keeps its stored body and writes only what changed (same
/// sized values over their bytes, else untouched entries copied as bytes): whatever the shape and
/// the edits, the saved bytes must be exactly those of encoding the edited value from scratch.
@Suite(.tags(.sanitizeAddress)) struct StoredEditEncodingTests {
    typealias Generator = ValueEncodingTests.SeededGenerator

    /// Random bodies, random edits at any depth through the public API (scalars of every width,
    /// strings, type changes, nested containers handed out and edited, removals, array inserts),
    /// each mirrored on a plain `Value`; the body must equal the plain value's encoding.
    @Test func editsAtAnyDepthEncodeLikeAFullEncoding() throws {
        var random = Generator(seed: 21)
        var patched = 0
        for round in 0..<400 {
            let original = Self.randomDictionary(&random, depth: 0)
            let body = try ValueEncoder.encode(original)
            let document = Document(id: "d\(round)", revisionID: nil, sequence: 0, body: body)
            let edit = document.toMutable()
            var model = original
            for _ in 0..<Int.random(in: 1...4, using: &random) {
                Self.applyRandomEdit(&random, to: edit.root, model: &model)
            }
            let expected = try ValueEncoder.encode(model)
            let encoded = try edit.encodeBody()
            #expect(encoded == expected, "round \(round)")
            if edit.root.patchedBody != nil { patched += 1 }
            #expect(try edit.toMutable().encodeBody() == expected, "round \(round): a copy keeps the edits")
            guard case .dictionary(let entries) = model else { continue }
            #expect(edit.count == entries.count, "round \(round)")
            #expect(edit.keys == ValueEncoder.sortedKeys(entries.keys), "round \(round)")
            #expect(Set(edit.toDictionary().keys) == Set(entries.keys), "round \(round)")
        }
        // The same-size path must have been taken often enough to be tested, and not always.
        #expect(patched > 15)
        #expect(patched < 360)
    }

    /// Same-sized edits deep inside nested dictionaries and arrays are written over the stored
    /// bytes; a wider one anywhere makes the full encoding, with the same result.
    @Test func nestedSameSizeEditsAreWrittenOverTheStoredBytes() throws {
        let json = #"{"a":{"b":{"n":5,"s":"abc"},"list":[1,true,{"x":2.5}]},"z":0}"#
        let stored = Document(id: "d", revisionID: nil, sequence: 0, body: try JSON.encodeBinary(json))
        let edit = stored.toMutable()
        let a = try #require(edit.dictionary(forKey: "a"))
        a.dictionary(forKey: "b")?.setInt(6, forKey: "n").setString("xyz", forKey: "s")
        let list = try #require(a.array(forKey: "list"))
        try list.setValue(false, at: 1)
        list.dictionary(at: 2)?.setDouble(-1.25, forKey: "x")
        edit.setInt(-3, forKey: "z")
        let expected = try JSON.encodeBinary(#"{"a":{"b":{"n":6,"s":"xyz"},"list":[1,false,{"x":-1.25}]},"z":-3}"#)
        #expect(edit.root.patchedBody == expected)
        #expect(try edit.encodeBody() == expected)
        // Reading a nested container without changing it keeps the body as it was.
        let readOnly = stored.toMutable()
        _ = readOnly.dictionary(forKey: "a")?.array(forKey: "list")?.dictionary(at: 2)
        #expect(try readOnly.encodeBody() == stored.body)
        // A wider value deep down: not patched, same bytes as a full encoding.
        a.dictionary(forKey: "b")?.setInt(300, forKey: "n")
        #expect(edit.root.patchedBody == nil)
        #expect(try edit.encodeBody() == JSON.encodeBinary(#"{"a":{"b":{"n":300,"s":"xyz"},"list":[1,false,{"x":-1.25}]},"z":-3}"#))
        // An element added: the array's layout changed, so no patch either.
        let grown = stored.toMutable()
        grown.dictionary(forKey: "a")?.array(forKey: "list")?.addInt(7)
        #expect(grown.root.patchedBody == nil)
        #expect(try grown.encodeBody() == JSON.encodeBinary(#"{"a":{"b":{"n":5,"s":"abc"},"list":[1,true,{"x":2.5},7]},"z":0}"#))
    }

    /// Through a database: nested edits of a stored document land, and the revision made from
    /// the spliced body is the one the full encoding of the same contents gives.
    @Test func nestedEditsOfAStoredDocumentAreSaved() async throws {
        try await withDatabase { database, _ in
            let collection = try database.defaultCollection()
            let json = #"{"a":{"b":{"n":5},"list":[1,2]},"visits":1}"#
            try await collection.save(document: try MutableDocument(id: "d", json: json))
            let stored = try #require(try await collection.document(id: "d"))
            let edit = stored.toMutable().setInt(2, forKey: "visits")
            edit.dictionary(forKey: "a")?.dictionary(forKey: "b")?.setInt(6, forKey: "n")
            try edit.dictionary(forKey: "a")?.array(forKey: "list")?.setValue(3, at: 1)
            let spliced = try edit.encodeBody()
            try await collection.save(document: edit)
            let expected = #"{"a":{"b":{"n":6},"list":[1,3]},"visits":2}"#
            let reread = try #require(try await collection.document(id: "d"))
            #expect(reread.toJSON() == expected)
            #expect(reread.body == spliced)
            let full = try JSON.encodeBinary(expected)
            #expect(spliced == full)
            let parent = try #require(stored.revisionID)
            #expect(reread.revisionID == (try RevisionID.make(parent: parent, deleted: false, body: full)))
            #expect(edit.revisionID == reread.revisionID)
        }
    }

    /// A container moved to another key is written whole there, even when it fits the old bytes.
    @Test func aContainerMovedToAnotherKeyIsWrittenWhereItGoes() throws {
        let json = #"{"p":{"k":1},"q":{"k":2}}"#
        let stored = Document(id: "d", revisionID: nil, sequence: 0, body: try JSON.encodeBinary(json))
        let edit = stored.toMutable()
        edit.setDictionary(edit.dictionary(forKey: "p"), forKey: "q")
        #expect(try edit.encodeBody() == JSON.encodeBinary(#"{"p":{"k":1},"q":{"k":1}}"#))
        let renamed = stored.toMutable()
        renamed.setDictionary(renamed.dictionary(forKey: "q"), forKey: "r").removeValue(forKey: "q")
        #expect(try renamed.encodeBody() == JSON.encodeBinary(#"{"p":{"k":1},"r":{"k":2}}"#))
        #expect(renamed.keys == ["p", "r"])
    }

    /// Keys set out of order into a large dictionary stop being kept sorted, and still encode in
    /// the stored order; removals and replacements work either way.
    @Test func manyKeysInAnyOrderEncodeSorted() throws {
        var random = Generator(seed: 7)
        let keys = (0..<600).map { "k\($0)" }.shuffled(using: &random)
        let dictionary = MutableDictionaryObject()
        var model: [String: Value] = [:]
        for (index, key) in keys.enumerated() {
            dictionary.setInt(index, forKey: key)
            model[key] = .int(Int64(index))
        }
        for key in keys.prefix(100) {
            dictionary.removeValue(forKey: key)
            model[key] = nil
        }
        for key in keys.suffix(50) {
            dictionary.setString(key, forKey: key)
            model[key] = .string(key)
        }
        let document = MutableDocument(id: "many").setDictionary(dictionary, forKey: "all")
        #expect(try document.encodeBody() == ValueEncoder.encode(.dictionary(["all": .dictionary(model)])))
        #expect(dictionary.count == model.count)
        #expect(dictionary.keys == ValueEncoder.sortedKeys(model.keys))
        #expect(dictionary.int(forKey: keys[200]) == 200)
    }

    /// Keys are told apart by their bytes, as stored: canonically equivalent spellings stay two keys.
    @Test func keysAreComparedByTheirBytes() throws {
        let composed = "\u{E9}"
        let decomposed = "e\u{301}"
        let document = MutableDocument(id: "k").setInt(1, forKey: composed).setInt(2, forKey: decomposed)
        #expect(document.count == 2)
        let stored = Document(id: "k", revisionID: nil, sequence: 0, body: try document.encodeBody())
        #expect(stored.int(forKey: composed) == 1)
        #expect(stored.int(forKey: decomposed) == 2)
    }

    // MARK: - Random shapes and edits

    private static let keyPool = ["a", "b", "c", "id", "n", "name", "nested", "tags", "x", "zz", "\u{E9}t\u{E9}"]

    private static func randomScalar(_ random: inout Generator) -> Value {
        switch Int.random(in: 0..<9, using: &random) {
        case 0: .null
        case 1: .bool(Bool.random(using: &random))
        case 2: .int(Int64.random(in: -130...130, using: &random))
        case 3: .int(Int64.random(in: -40_000...40_000, using: &random))
        case 4: .int(Int64.random(in: Int64(Int32.min) - 5...Int64(Int32.max) + 5, using: &random))
        case 5: .int(Int64.random(in: .min ... .max, using: &random))
        case 6: .double(Double.random(in: -1e6...1e6, using: &random))
        case 7: .string(String(repeating: "s", count: Int.random(in: 0...3, using: &random)))
        default: .string(String(repeating: "long", count: Int.random(in: 30...40, using: &random)))
        }
    }

    private static func randomValue(_ random: inout Generator, depth: Int) -> Value {
        guard depth < 3 else { return randomScalar(&random) }
        switch Int.random(in: 0..<5, using: &random) {
        case 0: return randomDictionary(&random, depth: depth + 1)
        case 1:
            let count = Int.random(in: 0...4, using: &random)
            return .array((0..<count).map { _ in randomValue(&random, depth: depth + 1) })
        default: return randomScalar(&random)
        }
    }

    static func randomDictionary(_ random: inout Generator, depth: Int) -> Value {
        var entries: [String: Value] = [:]
        for _ in 0..<Int.random(in: 0...6, using: &random) {
            entries[keyPool.randomElement(using: &random)!] = randomValue(&random, depth: depth)
        }
        return .dictionary(entries)
    }

    /// A value of the same kind and, often, the same encoded size as `old`.
    private static func similarValue(_ random: inout Generator, to old: Value?) -> Value {
        switch old {
        case .int(let number) where Bool.random(using: &random):
            return .int(number == .max ? number - 1 : number + 1)
        case .bool(let flag): return .bool(!flag)
        case .double(let number): return .double(number / 2 + 1)
        case .string(let text) where Bool.random(using: &random):
            return .string(String(text.reversed()).uppercased())
        default: return randomValue(&random, depth: 2)
        }
    }

    /// Sets `value` through the setter its type has, as an application would.
    private static func set(_ value: Value, forKey key: String, in dictionary: MutableDictionaryObject) {
        switch value {
        case .int(let number): dictionary.setInt64(number, forKey: key)
        case .bool(let flag): dictionary.setBoolean(flag, forKey: key)
        case .double(let number): dictionary.setDouble(number, forKey: key)
        case .string(let text): dictionary.setString(text, forKey: key)
        case .null: dictionary.setValue(nil, forKey: key)
        case .dictionary, .array, .largeInteger: dictionary.setValue(ValueConversion.plain(value), forKey: key)
        }
    }

    /// One random edit of `dictionary` or of a container inside it, mirrored on `model`.
    private static func applyRandomEdit(_ random: inout Generator, to dictionary: MutableDictionaryObject, model: inout Value) {
        guard case .dictionary(var entries) = model else { return }
        let existing = Bool.random(using: &random) && !entries.isEmpty
        let key = existing ? entries.keys.sorted().randomElement(using: &random)! : keyPool.randomElement(using: &random)!
        switch (Int.random(in: 0..<10, using: &random), entries[key]) {
        case (0..<3, .dictionary?):
            // Into a nested dictionary, through the object the getter hands out.
            guard let child = dictionary.dictionary(forKey: key) else {
                Issue.record("no dictionary at \(key)")
                return
            }
            var nested = entries[key]!
            applyRandomEdit(&random, to: child, model: &nested)
            entries[key] = nested
        case (0..<3, .array(var elements)?):
            guard let child = dictionary.array(forKey: key) else {
                Issue.record("no array at \(key)")
                return
            }
            applyRandomEdit(&random, to: child, elements: &elements)
            entries[key] = .array(elements)
        case (3, _):
            dictionary.removeValue(forKey: key)
            entries[key] = nil
        case (4, _):
            let value = randomValue(&random, depth: 1)  // often a change of type
            set(value, forKey: key, in: dictionary)
            entries[key] = value
        default:
            let value = similarValue(&random, to: entries[key])
            set(value, forKey: key, in: dictionary)
            entries[key] = value
        }
        model = .dictionary(entries)
    }

    private static func applyRandomEdit(_ random: inout Generator, to array: MutableArrayObject, elements: inout [Value]) {
        let choice = Int.random(in: 0..<8, using: &random)
        if elements.isEmpty || choice == 0 {
            let value = randomScalar(&random)
            array.addValue(ValueConversion.plain(value))
            elements.append(value)
            return
        }
        let index = Int.random(in: 0..<elements.count, using: &random)
        switch (choice, elements[index]) {
        case (1, _):
            _ = try? array.removeValue(at: index)
            elements.remove(at: index)
        case (2, _):
            let value = randomScalar(&random)
            _ = try? array.insertValue(ValueConversion.plain(value), at: index)
            elements.insert(value, at: index)
        case (3...4, .dictionary(var nested)) where array.dictionary(at: index) != nil:
            var model = Value.dictionary(nested)
            applyRandomEdit(&random, to: array.dictionary(at: index)!, model: &model)
            if case .dictionary(let edited) = model { nested = edited }
            elements[index] = .dictionary(nested)
        default:
            let value = similarValue(&random, to: elements[index])
            _ = try? array.setValue(ValueConversion.plain(value), at: index)
            elements[index] = value
        }
    }
}
